/**
 * K strategies due at the same instant, through the running worker's own path: a Worker started on a file
 * of K strategies (no cron: the bench fires the ticks), then one scheduler tick per strategy at the same
 * moment, as node-cron would fire them. Cycles queue in the engine's limiter before quoting, so a quote is
 * only asked for when its cycle can use it at once. The tick instant plays the slot: placed, expired, the
 * lags, CPU per 1,000 orders and RSS are burst-figures.ts's, as in the replica bursts; the quote → order gap
 * is this section's own, timed on the client in this process.
 */
import { rm } from 'node:fs/promises';
import postgres from 'postgres';
import { Worker } from '../../src/engine/index.js';
import {
  dcaStrategyYaml,
  openBenchEngine,
  type TimedCall,
  writeStrategiesFile,
} from '../harness/bench-engine.js';
import {
  type BurstOrders,
  burstRows,
  cpuSecondsPer1000Orders,
  readBurstOrders,
  startBurstUsage,
  type WorkerMemory,
} from '../harness/burst-figures.js';
import { resetPeakRss } from '../harness/process-usage.js';
import { formatMs, type ReportRow } from '../harness/report.js';
import type { SandboxProcess } from '../harness/sandbox-process.js';
import { type LatencySummary, round, summarize } from '../harness/stats.js';

export interface BurstResult extends BurstOrders {
  strategies: number;
  concurrency: number;
  /** From the ticks until every cycle was recorded. */
  allRecordedMs: number;
  outcomes: Record<string, number>;
  /** The bench process's CPU seconds over that time: the worker's, and the bench's timing of its calls. */
  cpuSeconds: number;
  cpuSecondsPer1000Orders: number;
  /**
   * The bench process's memory, the only worker process here: tsx's loader and what the sections before
   * this one left are in it too, so it is an upper bound, not comparable with a replica's.
   */
  workerMemory: WorkerMemory[];
  quoteToOrder: LatencySummary;
  targets: { expiredQuotes: number; quoteToOrderP99Ms: number };
}

const TARGET_P99_MS = 1_000;

export async function runBurstSection(sandbox: SandboxProcess, databaseUrl: string, count: number) {
  const names = Array.from({ length: count }, (_, i) => `burst-${String(i + 1).padStart(5, '0')}`);
  const file = await writeStrategiesFile(names.map((name) => dcaStrategyYaml(name)));
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  const calls: TimedCall[] = [];
  // The bench process's high-water mark holds the sections before this one: its loading peak counts from here.
  await resetPeakRss(process.pid);
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
    const usageAtEnd = await startBurstUsage([process.pid]);
    const began = performance.now();
    // The instant the ticks fire plays the slot: the strategies' own slot (10:00 in São Paulo) is long past.
    const now = new Date();
    for (const name of names) worker.scheduler.tick(name, now);
    await worker.scheduler.settled();
    const allRecordedMs = performance.now() - began;
    const usage = await usageAtEnd();
    const orders = await readBurstOrders(sql, sandbox, names, now);
    const outcomes = await outcomesOf(engine.app);
    const result: BurstResult = {
      strategies: count,
      concurrency: engine.context.settings.concurrency,
      ...orders,
      allRecordedMs: round(allRecordedMs, 1),
      outcomes,
      cpuSeconds: usage.cpuSeconds,
      cpuSecondsPer1000Orders: cpuSecondsPer1000Orders(usage, orders),
      workerMemory: usage.workers,
      quoteToOrder: quoteToOrderOf(calls),
      targets: { expiredQuotes: 0, quoteToOrderP99Ms: TARGET_P99_MS },
    };
    const rows: ReportRow[] = [
      {
        section: 'burst',
        metric: 'strategies due at once / cycles in flight (adaptive) at most',
        value: `${count} / ${result.concurrency}`,
      },
      ...burstRows('burst', {
        strategies: count,
        orders,
        usage,
        states: Object.entries(outcomes)
          .map(([outcome, n]) => `${n} ${outcome}`)
          .join(', '),
      }),
      {
        section: 'burst',
        metric: 'quote->order p50 / p99',
        value: `${formatMs(result.quoteToOrder.p50Ms)} / ${formatMs(result.quoteToOrder.p99Ms)}`,
        target: `p99 < ${TARGET_P99_MS} ms`,
        met: result.quoteToOrder.p99Ms < TARGET_P99_MS && result.quoteToOrder.count > 0,
      },
    ];
    return { result, rows };
  } finally {
    await worker.stop();
    await engine.close();
    await sql.end();
    await rm(file, { force: true });
  }
}

/** From each quote's answer to the departure of its order request, on the bench process's clock. */
function quoteToOrderOf(calls: readonly TimedCall[]): LatencySummary {
  const quoteAnswered = new Map<string, number>();
  for (const call of calls) {
    if (call.operation === 'getQuote' && call.ok && call.quoteId) quoteAnswered.set(call.quoteId, call.endAt);
  }
  const orders = calls.filter((call) => call.operation === 'createOrder');
  const gaps = orders.flatMap((order) => {
    const answered = order.quoteId === undefined ? undefined : quoteAnswered.get(order.quoteId);
    return answered === undefined ? [] : [order.startAt - answered];
  });
  return summarize(gaps);
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
