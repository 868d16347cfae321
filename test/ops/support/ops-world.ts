/**
 * The world of an operations test: a sandbox that accepts one distinctive token, a PostgreSQL database of
 * its own, and `treasury-bot run` as a child process with a webhook secret and a public url pointing at its
 * own receiver, so that the sandbox's webhooks flow. Everything the worker prints is kept, line by line.
 */

import { rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { dirname } from 'node:path';
import { type RunningSandbox, type SandboxOptions, startSandbox } from '../../../src/sandbox/index.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { type RunningCommand, startCommand, writeWorkerFiles } from '../../support/worker-process.js';
import { parseExposition, type Scrape } from './prometheus.js';

/** Distinctive, so that a leak cannot hide behind a common word; both at least 16 characters. */
export const OPS_TOKEN = 'opsTok-Zq8Wv3Lm5Kx1Rb7N';
export const OPS_SECRET = 'opsHook-Tj4Ye9Pc2Gd6Hs0F';

export interface OpsWorldOptions {
  strategies: string;
  settings: string;
  logLevel: string;
  sandbox?: SandboxOptions;
}

export interface HttpAnswer {
  status: number;
  body: string;
}

export interface OpsWorld {
  sandbox: RunningSandbox;
  test: TestDatabase;
  /** The worker's environment; CLI commands run with it see the same database and files. */
  env: Record<string, string>;
  worker: RunningCommand;
  /** http://127.0.0.1:PORT of the worker's listener. */
  /** The ops listener (metrics, health, readiness). */
  baseUrl: string;
  /** The webhook receiver's own listener. */
  webhookUrl: string;
  /** GET on the ops listener. */
  get(path: string): Promise<HttpAnswer>;
  /** POST on the webhook listener. */
  post(path: string, body: unknown): Promise<HttpAnswer>;
  scrape(): Promise<Scrape>;
  /** Resolves once the worker printed `count` lines containing `text` (rejects if it exits first). */
  waitForLines(text: string, count: number): Promise<void>;
  close(): Promise<void>;
}

export async function startOpsWorld(options: OpsWorldOptions): Promise<OpsWorld> {
  const sandbox = await startSandbox({
    tokens: [OPS_TOKEN],
    stepMs: 250,
    webhookRetryDelaysMs: [100, 300],
    ...options.sandbox,
  });
  const test = await createTestDatabase('postgres');
  // The public url must name the port before the worker starts, so the ports are chosen here.
  const port = await freePort();
  const webhookPort = await freePort();
  const files = await writeWorkerFiles(options.strategies, options.settings);
  if (files.TREASURY_CONFIG === undefined) throw new Error('writeWorkerFiles gave no TREASURY_CONFIG');
  const folder = dirname(files.TREASURY_CONFIG);
  const env = {
    ...files,
    DATABASE_URL: test.url ?? '',
    TREASURY_API_URL: sandbox.url,
    TREASURY_API_TOKEN: OPS_TOKEN,
    TREASURY_WEBHOOK_SECRET: OPS_SECRET,
    TREASURY_WEBHOOK_PUBLIC_URL: `http://127.0.0.1:${webhookPort}`,
    TREASURY_OPS_ADDR: `127.0.0.1:${port}`,
    TREASURY_WEBHOOK_ADDR: `127.0.0.1:${webhookPort}`,
    LOG_LEVEL: options.logLevel,
  };
  const worker = startCommand(['run'], env);
  const baseUrl = `http://127.0.0.1:${port}`;
  const webhookUrl = `http://127.0.0.1:${webhookPort}`;
  const answer = async (response: Response): Promise<HttpAnswer> => ({
    status: response.status,
    body: await response.text(),
  });
  const world: OpsWorld = {
    sandbox,
    test,
    env,
    worker,
    baseUrl,
    webhookUrl,
    get: async (path) => answer(await fetch(`${baseUrl}${path}`)),
    post: async (path, body) =>
      answer(
        await fetch(`${webhookUrl}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        }),
      ),
    scrape: async () => {
      const metrics = await world.get('/metrics');
      if (metrics.status !== 200) throw new Error(`/metrics answered ${metrics.status}`);
      return parseExposition(metrics.body);
    },
    waitForLines: (text, count) => waitForLines(worker, text, count),
    close: async () => {
      if (worker.child.exitCode === null && worker.child.signalCode === null) {
        worker.child.kill('SIGTERM');
        await worker.exited;
      }
      await sandbox.close();
      await test.drop();
      await rm(folder, { recursive: true, force: true });
    },
  };
  try {
    await worker.waitForLine('worker started');
  } catch (error) {
    await world.close();
    throw error;
  }
  return world;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no TCP address');
  return address.port;
}

/** Re-counted on every chunk the worker prints; worker-process.ts has already split it into lines. */
function waitForLines(worker: RunningCommand, text: string, count: number): Promise<void> {
  const enough = () => worker.lines.filter((line) => line.includes(text)).length >= count;
  if (enough()) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const check = () => {
      if (!enough()) return;
      worker.child.stdout?.off('data', check);
      resolve();
    };
    worker.child.stdout?.on('data', check);
    void worker.exited.then(({ code, signal }) =>
      reject(new Error(`worker exited (${code ?? signal}) before ${count} lines with "${text}"`)),
    );
  });
}
