// EchoServer: line-echo TCP server for the naglefix legacy tests.
// Usage: java EchoServer PORT [LIFETIME_S]   (PORT 0 = ephemeral)
// Prints "PORT <n>" first, echoes every line + "\n" in ONE write,
// exits when stdin closes or after LIFETIME_S seconds (default 60).
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

public class EchoServer {
    public static void main(String[] args) throws Exception {
        int port = args.length > 0 ? Integer.parseInt(args[0]) : 0;
        long lifetimeMs = 1000L * (args.length > 1 ? Integer.parseInt(args[1]) : 60);

        ServerSocket server = new ServerSocket(port, 50, InetAddress.getByName("127.0.0.1"));
        System.out.println("PORT " + server.getLocalPort());
        System.out.flush();

        // Exit when stdin reaches EOF (parent went away) ...
        daemon(() -> {
            try {
                while (System.in.read() != -1) { /* ignore input */ }
            } catch (Exception e) { /* treat as EOF */ }
            System.exit(0);
        });
        // ... or after a bounded lifetime, so a CI run can never hang on us.
        daemon(() -> {
            try { Thread.sleep(lifetimeMs); } catch (InterruptedException e) { /* exit */ }
            System.err.println("EchoServer: lifetime expired");
            System.exit(0);
        });

        while (true) {
            Socket conn = server.accept();
            daemon(() -> serve(conn));
        }
    }

    private static void serve(Socket conn) {
        try (Socket s = conn;
             BufferedReader in = new BufferedReader(
                     new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
             OutputStream out = s.getOutputStream()) {
            String line;
            while ((line = in.readLine()) != null) {
                out.write((line + "\n").getBytes(StandardCharsets.UTF_8)); // one write
            }
        } catch (Exception e) {
            System.err.println("EchoServer: connection error: " + e);
        }
    }

    private static void daemon(Runnable r) {
        Thread t = new Thread(r);
        t.setDaemon(true);
        t.start();
    }
}
