/**
 * Quote requests per second against the sandbox over loopback keep-alive.
 *
 *   npx tsx bench/sandbox-quotes.ts [--seconds 5] [--connections 16] [--concurrency 64] [--in-process]
 *
 * By default the sandbox runs in a child process (the `treasury-bot sandbox` command) so that the client
 * and the server each have a core, as with a real service; --in-process shares one event loop instead.
 */
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { DEMO_TOKEN, startSandbox } from '../src/sandbox/index.js';
import { startSandboxProcess } from './harness/sandbox-process.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    connections: { type: 'string', default: '16' },
    concurrency: { type: 'string', default: '64' },
    'in-process': { type: 'boolean', default: false },
  },
});
const seconds = Number(values.seconds);
const connections = Number(values.connections);
const concurrency = Number(values.concurrency);
const WARM_UP_MS = 1_000;
const PATH = '/client/quote?symbols=USDTBRL&amount=2500.00';

const server = values['in-process'] ? await startInProcess() : await startChild();
const pool = new Pool(server.url, { connections, pipelining: 1, keepAliveTimeout: 60_000 });
const headers = { authorization: `Bearer ${DEMO_TOKEN}`, accept: 'application/json' };

let measuring = false;
let stop = false;
let completed = 0;
let failed = 0;
const latencies: number[] = [];

async function worker(): Promise<void> {
  while (!stop) {
    const began = performance.now();
    try {
      const response = await pool.request({ method: 'GET', path: PATH, headers });
      await response.body.text();
      if (response.statusCode !== 200) throw new Error(`status ${response.statusCode}`);
      if (measuring) {
        completed++;
        latencies.push(performance.now() - began);
      }
    } catch {
      if (measuring) failed++;
    }
  }
}

const workers = Array.from({ length: concurrency }, () => worker());
await new Promise((resolve) => setTimeout(resolve, WARM_UP_MS));
measuring = true;
const began = performance.now();
await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
measuring = false;
const elapsed = (performance.now() - began) / 1000;
stop = true;
await Promise.all(workers);
await pool.close();
await server.close();

latencies.sort((a, b) => a - b);
const percentile = (p: number) =>
  latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0;
const rate = completed / elapsed;
console.log(
  JSON.stringify({
    benchmark: 'sandbox-quotes',
    mode: values['in-process'] ? 'in-process' : 'child-process',
    seconds: Number(elapsed.toFixed(2)),
    connections,
    concurrency,
    requests: completed,
    errors: failed,
    reqPerSec: Math.round(rate),
    p50Ms: Number(percentile(0.5).toFixed(2)),
    p99Ms: Number(percentile(0.99).toFixed(2)),
  }),
);
console.log(`${Math.round(rate)} req/s (target >= 5000)`);

interface Server {
  url: string;
  close(): Promise<void>;
}

async function startInProcess(): Promise<Server> {
  const sandbox = await startSandbox({ stepMs: 0 });
  return sandbox;
}

async function startChild(): Promise<Server> {
  return startSandboxProcess({ stepMs: 0 });
}
