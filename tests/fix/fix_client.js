// fix_client.js: the legacy harness's Node `net` client (Nagle on, two
// writes, wait for the echoed line), printing every round for tests/fix.
// Usage: node fix_client.js HOST PORT ROUNDS
// Prints "pid N", then per round "round I MS"; writes "hello I " and
// "world I\r\n", checks the echoed line is "hello I world I\n" to the byte
// ("BAD ..." and exit 1 if not).
'use strict';
const net = require('net');

const [host, portArg, roundsArg] = process.argv.slice(2);
const rounds = Number(roundsArg);
const sock = net.connect({ host, port: Number(portArg) });
sock.setNoDelay(false); // Nagle on, as in the legacy program
sock.setTimeout(10000, () => { console.log('BAD timeout'); process.exit(1); });
sock.on('error', (e) => { console.log('BAD ' + String(e)); process.exit(1); });

let round = 0;
let pending = '';
let t0 = 0n;

function sendRequest() {
  t0 = process.hrtime.bigint();
  sock.write(`hello ${round} `);
  sock.write(`world ${round}\r\n`);
}

sock.on('connect', () => {
  process.stdout.write(`pid ${process.pid}\n`);
  sendRequest();
});
sock.on('data', (chunk) => {
  pending += chunk.toString('latin1');
  while (pending.includes('\n')) {
    const i = pending.indexOf('\n') + 1;
    const line = pending.slice(0, i);
    pending = pending.slice(i);
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (line !== `hello ${round} world ${round}\n`) {
      process.stdout.write(`BAD round ${round}: got ${JSON.stringify(line)}\n`);
      process.exit(1);
    }
    process.stdout.write(`round ${round} ${ms.toFixed(3)}\n`);
    round += 1;
    if (round < rounds) {
      sendRequest();
    } else {
      process.stdout.write(`done ${rounds}\n`);
      sock.end();
      return;
    }
  }
});
