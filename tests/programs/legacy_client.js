// legacy_client.js: Node `net` write-write-read client (Nagle + delayed ACK).
// Usage: node legacy_client.js HOST PORT ROUNDS split|single
// Per round: write "hello " and "world\r\n" (split: two writes, single: one),
// then wait for the echoed line. Round 1 is a warm-up, excluded from stats.
// Final line: median_ms=<x> p99_ms=<y> rounds=<measured rounds>
'use strict';
const net = require('net');

const [host, portArg, roundsArg, mode] = process.argv.slice(2);
const port = Number(portArg);
const rounds = Number(roundsArg);
if (!host || !port || !(rounds >= 11) || !['split', 'single'].includes(mode)) {
  console.error('usage: legacy_client.js HOST PORT ROUNDS(>=11) split|single');
  process.exit(2);
}

const sock = net.connect({ host, port });
sock.setNoDelay(false); // Nagle on, as in the legacy program
sock.setTimeout(10000, () => { console.error('timeout'); process.exit(1); });
sock.on('error', (e) => { console.error(String(e)); process.exit(1); });

const times = [];
let round = 0;
let pending = '';
let t0 = 0n;

function sendRequest() {
  t0 = process.hrtime.bigint();
  if (mode === 'split') {
    sock.write('hello ');
    sock.write('world\r\n');
  } else {
    sock.write('hello world\r\n');
  }
}

function report() {
  times.sort((a, b) => a - b);
  const n = times.length;
  const median = n % 2 ? times[(n - 1) / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
  const p99 = times[Math.ceil(0.99 * n) - 1]; // nearest rank
  console.log(`median_ms=${median.toFixed(3)} p99_ms=${p99.toFixed(3)} rounds=${n}`);
}

sock.on('connect', sendRequest);
sock.on('data', (chunk) => {
  pending += chunk.toString('utf8');
  while (pending.includes('\n')) {
    pending = pending.slice(pending.indexOf('\n') + 1);
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (round > 0) times.push(ms);
    round += 1;
    if (round < rounds) {
      sendRequest();
    } else {
      sock.end();
      report();
      return;
    }
  }
});
