// FixClient: the legacy harness's LegacyClient (java.net.Socket, Nagle on,
// "hello " then "world\r\n" in two writes, readLine), printing every round
// for tests/fix. Usage: java FixClient HOST PORT ROUNDS
// Prints "pid N", then per round "round I MS"; writes "hello I " and
// "world I\r\n", checks the echoed line is "hello I world I" to the byte
// ("BAD ..." and exit 1 if not).
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

public class FixClient {
    public static void main(String[] args) throws Exception {
        int rounds = Integer.parseInt(args[2]);
        Socket sock = new Socket();
        sock.setTcpNoDelay(false); // Nagle on, as in the legacy program
        sock.connect(new InetSocketAddress(args[0], Integer.parseInt(args[1])), 10000);
        sock.setSoTimeout(10000);
        OutputStream out = sock.getOutputStream();
        BufferedReader reader = new BufferedReader(
                new InputStreamReader(sock.getInputStream(), StandardCharsets.US_ASCII));
        System.out.println("pid " + ProcessHandle.current().pid());
        System.out.flush();
        for (int i = 0; i < rounds; i++) {
            long t0 = System.nanoTime();
            out.write(("hello " + i + " ").getBytes(StandardCharsets.US_ASCII));
            out.write(("world " + i + "\r\n").getBytes(StandardCharsets.US_ASCII));
            String line = reader.readLine();
            long t1 = System.nanoTime();
            String want = "hello " + i + " world " + i;
            if (!want.equals(line)) {
                System.out.println("BAD round " + i + ": got " + line);
                System.exit(1);
            }
            System.out.println(String.format(Locale.ROOT, "round %d %.3f", i, (t1 - t0) / 1e6));
            System.out.flush();
        }
        System.out.println("done " + rounds);
        sock.close();
    }
}
