/**
 * The sandbox in its own process, as the real service would be: the worker under test and the simulator
 * then each get a core instead of sharing one event loop, and the worker's figures are not inflated by the
 * simulator's own work. The control API (faults, ledger) is reached over HTTP with the admin token.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import type { FaultConfig, SandboxOrderView } from '../../src/sandbox/index.js';
import { DEMO_TOKEN } from '../../src/sandbox/index.js';

/**
 * With BENCH_PROFILE_DIR set, each process the bench spawns (the sandbox, the replicas) writes a CPU profile
 * there when it exits: Node 20 refuses `--cpu-prof` in NODE_OPTIONS.
 */
export function profilerArgs(): string[] {
  const directory = process.env.BENCH_PROFILE_DIR;
  return directory ? ['--cpu-prof', `--cpu-prof-dir=${directory}`] : [];
}

export interface SandboxProcessOptions {
  /** Lifecycle step interval per order; 0 leaves orders pending (default 0: benches need no settlement). */
  stepMs?: number;
  seed?: number;
  /** Decimal text; large by default so that thousands of orders never run out of credit. */
  creditLimit?: string;
}

export interface SandboxProcess {
  url: string;
  token: string;
  pid: number;
  setFaults(faults: FaultConfig): Promise<void>;
  ledger(): Promise<SandboxOrderView[]>;
  /**
   * Quote → order pairs straight to the sandbox, `concurrency` at a time, so that its code is compiled and
   * optimized before a measurement: the real service is a warm server on other machines, and a cold sandbox
   * charges its own JIT warm-up to the cores the worker is measured on.
   */
  warm(pairs: number, concurrency?: number): Promise<void>;
  /** SIGTERM and wait for the exit; idempotent. */
  close(): Promise<void>;
}

const REPOSITORY_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const STARTUP_TIMEOUT_MS = 30_000;
/** The control API's token for bench runs (the sandbox makes a random one when none is given). */
const ADMIN_TOKEN = 'bench-sandbox-admin-token';

export async function startSandboxProcess(options: SandboxProcessOptions = {}): Promise<SandboxProcess> {
  const args = [
    '--import',
    'tsx',
    'src/cli.ts',
    'sandbox',
    '--port',
    '0',
    '--step-ms',
    String(options.stepMs ?? 0),
    '--seed',
    String(options.seed ?? 1),
    '--credit-limit',
    options.creditLimit ?? '1000000000000.00',
    '--admin-token',
    ADMIN_TOKEN,
  ];
  const child = spawn(process.execPath, [...profilerArgs(), ...args], {
    cwd: REPOSITORY_ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, LOG_LEVEL: 'info' },
  });
  const url = await readListeningUrl(child);
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };
  let closing: Promise<void> | undefined;
  return {
    url,
    token: DEMO_TOKEN,
    pid: child.pid!,
    async setFaults(faults) {
      const response = await request(`${url}/_sandbox/faults`, {
        method: 'PUT',
        headers: admin,
        body: JSON.stringify(faults),
      });
      const text = await response.body.text();
      if (response.statusCode !== 200)
        throw new Error(`sandbox refused faults: ${response.statusCode} ${text}`);
    },
    async warm(pairs, concurrency = 10) {
      const client = { authorization: `Bearer ${DEMO_TOKEN}`, 'content-type': 'application/json' };
      const pair = async () => {
        const quote = await request(`${url}/client/quote?symbols=USDTBRL&amount=100.00`, { headers: client });
        const { quoteId } = (await quote.body.json()) as { quoteId: string };
        const order = await request(`${url}/client/order`, {
          method: 'POST',
          headers: client,
          body: JSON.stringify({ quoteId }),
        });
        await order.body.text();
        if (quote.statusCode !== 200 || order.statusCode >= 300)
          throw new Error(`sandbox warm-up answered ${quote.statusCode}, ${order.statusCode}`);
      };
      for (let done = 0; done < pairs; done += concurrency) {
        await Promise.all(Array.from({ length: Math.min(concurrency, pairs - done) }, pair));
      }
    },
    async ledger() {
      const response = await request(`${url}/_sandbox/ledger`, { headers: admin });
      const body = (await response.body.json()) as { orders: SandboxOrderView[] };
      if (response.statusCode !== 200) throw new Error(`sandbox ledger answered ${response.statusCode}`);
      return body.orders;
    },
    close() {
      closing ??= (async () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = once(child, 'exit');
        child.kill('SIGTERM');
        await exited;
      })();
      return closing;
    },
  };
}

/** Resolves with the address from the "sandbox listening at" log line; keeps draining stdout afterwards. */
function readListeningUrl(child: ChildProcess): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let output = '';
    let found = false;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`sandbox did not start within ${STARTUP_TIMEOUT_MS} ms: ${output}`));
    }, STARTUP_TIMEOUT_MS);
    child.stdout!.on('data', (chunk: Buffer) => {
      // A pipe nobody reads fills up and blocks the child, so reading continues after the match.
      if (found) return;
      output += chunk.toString();
      const match = /sandbox listening at (http:\/\/[^\s"]+)/.exec(output);
      if (match) {
        found = true;
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (!found) reject(new Error(`sandbox exited (${code ?? signal}) before listening: ${output}`));
    });
  });
}
