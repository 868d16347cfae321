/**
 * K strategies due at the same instant, through the running worker's own path: a Worker started on a file
 * of K strategies (no cron: the bench fires the ticks), then one scheduler tick per strategy at the same
 * moment, as node-cron would fire them. Cycles queue in the engine's limiter before quoting, so a quote is
 * only asked for when its cycle can use it at once.
 */
import { rm } from 'node:fs/promises';
import { Worker } from '../../src/engine/index.js';
import {
  dcaStrategyYaml,
  openBenchEngine,
  type TimedCall,
  writeStrategiesFile,
} from '../harness/bench-engine.js';
import { formatMs, type ReportRow } from '../harness/report.js';
import type { SandboxProcess } from '../harness/sandbox-process.js';
import { type LatencySummary, round, summarize } from '../harness/stats.js';

export interface BurstResult {
  strategies: number;
  concurrency: number;
  /** From the ticks to the departure of the last order request. */
  lastOrderSentMs: number;
  /** From the ticks until every cycle was recorded. */
  allRecordedMs: number;
  ordersSent: number;
  outcomes: Record<string, number>;
  /** Quotes given up: expired at the service or past the worker's own deadline. Target 0. */
  expiredQuotes: number;
  quoteToOrder: LatencySummary;
  targets: { expiredQuotes: number; quoteToOrderP99Ms: number };
}

const TARGET_P99_MS = 1_000;

export async function runBurstSection(sandbox: SandboxProcess, databaseUrl: string, count: number) {
  const names = Array.from({ length: count }, (_, i) => `burst-${String(i + 1).padStart(5, '0')}`);
  const file = await writeStrategiesFile(names.map((name) => dcaStrategyYaml(name)));
  const calls: TimedCall[] = [];
  const engine = await openBenchEngine({
    databaseUrl,
    apiUrl: sandbox.url,
    apiToken: sandbox.token,
    onCall: (call) => calls.push(call),
  });
  const worker = new Worker(engine.context, { strategiesPath: file, useCron: false });
  try {
    await worker.start();
    // Maintenance ran once at start; let it settle so that the burst is measured alone.
    await worker.maintenance.runOnce();
    calls.length = 0;
    const began = performance.now();
    const now = new Date();
    for (const name of names) worker.scheduler.tick(name, now);
    await worker.scheduler.settled();
    const allRecordedMs = performance.now() - began;
    const result = summarizeBurst(calls, began, allRecordedMs, count, engine.context.settings.concurrency);
    result.outcomes = await outcomesOf(engine.app);
    result.expiredQuotes = await expiredQuotesOf(engine.app);
    return { result, rows: rowsOf(result) };
  } finally {
    await worker.stop();
    await engine.close();
    await rm(file, { force: true });
  }
}

function summarizeBurst(
  calls: readonly TimedCall[],
  began: number,
  allRecordedMs: number,
  count: number,
  concurrency: number,
): BurstResult {
  const quoteAnswered = new Map<string, number>();
  for (const call of calls) {
    if (call.operation === 'getQuote' && call.ok && call.quoteId) quoteAnswered.set(call.quoteId, call.endAt);
  }
  const orders = calls.filter((call) => call.operation === 'createOrder');
  const gaps = orders.flatMap((order) => {
    const answered = order.quoteId === undefined ? undefined : quoteAnswered.get(order.quoteId);
    return answered === undefined ? [] : [order.startAt - answered];
  });
  const lastSent = Math.max(began, ...orders.map((order) => order.startAt));
  return {
    strategies: count,
    concurrency,
    lastOrderSentMs: round(lastSent - began, 1),
    allRecordedMs: round(allRecordedMs, 1),
    ordersSent: orders.length,
    outcomes: {},
    expiredQuotes: 0,
    quoteToOrder: summarize(gaps),
    targets: { expiredQuotes: 0, quoteToOrderP99Ms: TARGET_P99_MS },
  };
}

type BenchApp = Awaited<ReturnType<typeof openBenchEngine>>['app'];

async function outcomesOf(app: BenchApp): Promise<Record<string, number>> {
  const outcomes: Record<string, number> = {};
  for (const value of (await app.metrics.cycles.get()).values) {
    const outcome = String(value.labels.outcome);
    outcomes[outcome] = (outcomes[outcome] ?? 0) + value.value;
  }
  return outcomes;
}

async function expiredQuotesOf(app: BenchApp): Promise<number> {
  return (await app.metrics.quotesExpired.get()).values.reduce((sum, value) => sum + value.value, 0);
}

function rowsOf(result: BurstResult): ReportRow[] {
  return [
    {
      section: 'burst',
      metric: `strategies due at once (cycles in flight: adaptive, cap ${result.concurrency})`,
      value: `${result.strategies} (${Object.entries(result.outcomes)
        .map(([outcome, n]) => `${n} ${outcome}`)
        .join(', ')})`,
    },
    {
      section: 'burst',
      metric: 'time until the last order was sent',
      value: formatMs(result.lastOrderSentMs),
    },
    {
      section: 'burst',
      metric: 'expired quotes',
      value: String(result.expiredQuotes),
      target: '0',
      met: result.expiredQuotes === 0,
    },
    {
      section: 'burst',
      metric: 'quote->order p50 / p99',
      value: `${formatMs(result.quoteToOrder.p50Ms)} / ${formatMs(result.quoteToOrder.p99Ms)}`,
      target: `p99 < ${TARGET_P99_MS} ms`,
      met: result.quoteToOrder.p99Ms < TARGET_P99_MS && result.quoteToOrder.count > 0,
    },
  ];
}
