// HttpServerFix: the JDK's own com.sun.net.httpserver.HttpServer, unmodified,
// serving one small text (HTTP/1.1, keep-alive), for tests/fix/run.sh.
// Usage: java HttpServerFix [LIFETIME_S]
// Prints "PORT <n>" first; exits when stdin closes or after LIFETIME_S
// seconds (default 120). The JDK writes the response header and the body
// in two writes: the body waits for the ACK of the header (Nagle), which
// the client delays.
import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;

public class HttpServerFix {
    public static void main(String[] args) throws Exception {
        long lifetimeMs = 1000L * (args.length > 0 ? Integer.parseInt(args[0]) : 120);
        HttpServer server = HttpServer.create(
                new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0), 50);
        byte[] body = "hello world\n".getBytes(StandardCharsets.US_ASCII);
        server.createContext("/hello.txt", ex -> {
            ex.getResponseHeaders().set("Content-Type", "text/plain");
            ex.sendResponseHeaders(200, body.length);
            try (OutputStream os = ex.getResponseBody()) {
                os.write(body);
            }
        });
        server.start();
        System.out.println("PORT " + server.getAddress().getPort());
        System.out.flush();
        Thread t = new Thread(() -> {
            try {
                while (System.in.read() != -1) { /* ignore input */ }
            } catch (Exception e) { /* treat as EOF */ }
            System.exit(0);
        });
        t.setDaemon(true);
        t.start();
        Thread.sleep(lifetimeMs);
        System.err.println("HttpServerFix: lifetime expired");
        System.exit(0);
    }
}
