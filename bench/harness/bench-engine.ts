/**
 * The worker as the composition root (src/app.ts) builds it, in this process: real database, real client
 * over HTTP to the sandbox process, real metrics and logger. Benches drive cycles through its engine
 * context, in its one account (`default`); the client is wrapped only to time the calls (one clock read
 * before and after each).
 */
import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import type { PurchaseClient } from '../../src/api/index.js';
import { App, type AppMode } from '../../src/app.js';
import {
  type AccountContext,
  type EngineContext,
  inAccount,
  recordStrategiesSeen,
} from '../../src/engine/index.js';
import { DEFAULT_ACCOUNT, loadStrategiesOrThrow, type Strategy } from '../../src/strategy/index.js';

export interface BenchEngineOptions {
  databaseUrl: string;
  apiUrl: string;
  apiToken: string;
  mode?: AppMode;
  /** Extra environment: TREASURY_STRATEGIES, TREASURY_DRY_RUN... */
  env?: Record<string, string>;
  /** Where config/default.yaml is found; default this repository (pass it from transpiled copies). */
  cwd?: string;
  /** Told of every timed client call. */
  onCall?: (call: TimedCall) => void;
}

/** One client call with its start and end on this process's performance clock. */
export interface TimedCall {
  operation: 'getBalance' | 'getQuote' | 'createOrder';
  startAt: number;
  endAt: number;
  ok: boolean;
  /** The quote a getQuote returned, or the one a createOrder used. */
  quoteId?: string;
}

export interface BenchEngine {
  app: App;
  /** The worker's context in its one account; also the EngineContext whose only account that is. */
  context: AccountContext;
  close(): Promise<void>;
}

export const REPOSITORY_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export async function openBenchEngine(options: BenchEngineOptions): Promise<BenchEngine> {
  const app = new App({
    mode: options.mode ?? 'once',
    cwd: options.cwd ?? REPOSITORY_ROOT,
    env: {
      DATABASE_URL: options.databaseUrl,
      TREASURY_API_URL: options.apiUrl,
      TREASURY_API_TOKEN: options.apiToken,
      TREASURY_CONFIG: 'config/default.yaml',
      TREASURY_OPS_ADDR: '127.0.0.1:0',
      LOG_LEVEL: 'info',
      ...options.env,
    },
    // Every cycle logs its line as in production; the line is serialized, then discarded by the OS.
    logDestination: pino.destination({ dest: '/dev/null', sync: false }),
  });
  await app.start();
  const { account } = inAccount(app.context, DEFAULT_ACCOUNT);
  const link = options.onCall
    ? {
        name: account.name,
        client: timeClient(account.client, options.onCall),
        tradingClient: timeClient(account.tradingClient ?? account.client, options.onCall),
      }
    : account;
  const context = { ...app.context, accounts: new Map([[link.name, link]]), account: link };
  return { app, context, close: () => app.stop() };
}

/** The buy cycle's three calls, timed; every other method is the client's own. */
function timeClient(client: PurchaseClient, onCall: (call: TimedCall) => void): PurchaseClient {
  const timed =
    <A extends unknown[], R>(operation: TimedCall['operation'], call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      const startAt = performance.now();
      const sent = (args[0] as { quoteId?: unknown } | undefined)?.quoteId;
      let quoteId = typeof sent === 'string' ? sent : undefined;
      let ok = false;
      try {
        const result = await call(...args);
        ok = true;
        const received = (result as { quoteId?: unknown }).quoteId;
        if (typeof received === 'string') quoteId = received;
        return result;
      } finally {
        onCall({ operation, startAt, endAt: performance.now(), ok, ...(quoteId ? { quoteId } : {}) });
      }
    };
  return {
    ...client,
    getBalance: timed('getBalance', client.getBalance),
    getQuote: timed('getQuote', client.getQuote),
    createOrder: timed('createOrder', client.createOrder),
  };
}

/** Writes the YAML documents to a file, loads them with the real loader and records them as seen. */
export async function loadBenchStrategies(
  context: EngineContext,
  documents: readonly string[],
): Promise<Strategy[]> {
  const file = await writeStrategiesFile(documents);
  try {
    const { strategies } = await loadStrategiesOrThrow(file);
    await recordStrategiesSeen(context, strategies);
    return strategies;
  } finally {
    await rm(file, { force: true });
  }
}

export async function writeStrategiesFile(documents: readonly string[]): Promise<string> {
  const file = join(tmpdir(), `treasury-bench-${process.pid}-${Date.now()}.yaml`);
  await writeFile(file, documents.join('---\n'));
  return file;
}

/** A DCA strategy with the rules a production one has: price cap, budgets, credit guards. */
export function dcaStrategyYaml(
  name: string,
  options: { dryRun?: boolean; guards?: boolean; schedule?: string; timezone?: string } = {},
): string {
  const lines = [
    `name: ${name}`,
    'kind: dca',
    'symbol: USDTBRL',
    'amount: "100.00"',
    `schedule: "${options.schedule ?? '0 10 * * *'}"`,
    `timezone: ${options.timezone ?? 'America/Sao_Paulo'}`,
    'maxPrice: "9.00"',
    'budget:',
    '  perDay: "100000000.00"',
    '  perMonth: "1000000000.00"',
  ];
  if (options.guards ?? true)
    lines.push('guards:', '  minCreditAvailable: "1000.00"', '  maxCreditUsedPct: 99');
  if (options.dryRun) lines.push('dryRun: true');
  return `${lines.join('\n')}\n`;
}
