// JHttpServer: the JDK's own HTTP server (com.sun.net.httpserver), as an
// application would use it, for tests/wire/t_captures.sh.
// Usage: java JHttpServer [LIFETIME_S]
// Listens on 127.0.0.1, a free port; prints "PORT <n>" first. Every GET is
// answered 200 with the 12 bytes "hello world\n": the JDK writes the status
// line and headers (sendResponseHeaders), then the body, two writes on a
// keep-alive connection with Nagle on (the JDK's default). Exits when stdin
// closes or after LIFETIME_S seconds (default 60).
import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;

public class JHttpServer {
    public static void main(String[] args) throws Exception {
        long lifetimeMs = 1000L * (args.length > 0 ? Integer.parseInt(args[0]) : 60);
        byte[] body = "hello world\n".getBytes(StandardCharsets.US_ASCII);
        HttpServer server = HttpServer.create(
                new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0), 50);
        server.createContext("/", ex -> {
            ex.getRequestBody().readAllBytes();
            ex.sendResponseHeaders(200, body.length);
            try (OutputStream out = ex.getResponseBody()) {
                out.write(body);
            }
        });
        server.start();
        System.out.println("PORT " + server.getAddress().getPort());
        System.out.flush();
        daemon(() -> {
            try {
                while (System.in.read() != -1) { /* ignore input */ }
            } catch (Exception e) { /* treat as EOF */ }
            System.exit(0);
        });
        daemon(() -> {
            try { Thread.sleep(lifetimeMs); } catch (InterruptedException e) { /* exit */ }
            System.exit(0);
        });
    }

    private static void daemon(Runnable r) {
        Thread t = new Thread(r);
        t.setDaemon(true);
        t.start();
    }
}
