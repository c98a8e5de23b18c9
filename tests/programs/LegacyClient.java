// LegacyClient: the classic write-write-read program (Nagle + delayed ACK).
// Usage: java LegacyClient HOST PORT ROUNDS split|single
// Per round: write "hello " and "world\r\n" (split: two writes, single: one),
// then readLine(). Round 1 is a warm-up and is excluded from the stats.
// Final line: median_ms=<x> p99_ms=<y> rounds=<measured rounds>
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Locale;

public class LegacyClient {
    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: LegacyClient HOST PORT ROUNDS split|single");
            System.exit(2);
        }
        String host = args[0];
        int port = Integer.parseInt(args[1]);
        int rounds = Integer.parseInt(args[2]);
        boolean split = args[3].equals("split");
        if (rounds < 11) throw new IllegalArgumentException("need ROUNDS >= 11");

        Socket sock = new Socket();
        sock.setTcpNoDelay(false); // Nagle on, as in the legacy program
        sock.connect(new InetSocketAddress(host, port), 10000);
        sock.setSoTimeout(10000);
        OutputStream out = sock.getOutputStream();
        BufferedReader reader = new BufferedReader(
                new InputStreamReader(sock.getInputStream(), StandardCharsets.UTF_8));

        byte[] hello = "hello ".getBytes(StandardCharsets.US_ASCII);
        byte[] world = "world\r\n".getBytes(StandardCharsets.US_ASCII);
        byte[] both = "hello world\r\n".getBytes(StandardCharsets.US_ASCII);

        double[] ms = new double[rounds - 1];
        for (int i = 0; i < rounds; i++) {
            long t0 = System.nanoTime();
            if (split) {
                out.write(hello);
                out.write(world);
            } else {
                out.write(both);
            }
            String line = reader.readLine();
            long t1 = System.nanoTime();
            if (line == null) throw new IllegalStateException("server closed connection");
            if (i > 0) ms[i - 1] = (t1 - t0) / 1e6;
        }
        sock.close();

        Arrays.sort(ms);
        int n = ms.length;
        double median = n % 2 == 1 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
        double p99 = ms[(int) Math.ceil(0.99 * n) - 1]; // nearest rank
        System.out.println(String.format(Locale.ROOT,
                "median_ms=%.3f p99_ms=%.3f rounds=%d", median, p99, n));
    }
}
