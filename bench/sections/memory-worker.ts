/**
 * Child process of the memory section: a full `run` worker (App in run mode: HTTP server, tracking,
 * maintenance, one node-cron task per strategy) with S strategies loaded, then C cycles dispatched through
 * its scheduler, while its own RSS is sampled. Runs alone in its process so that the RSS is the worker's.
 * Started with --expose-gc: each sample is taken right after a full collection, so growth means memory
 * still referenced, not garbage not yet collected; the raw RSS peak is recorded too.
 *
 * Input: one IPC message MemoryRequest. Output: one IPC message MemoryReport.
 */
import { rm } from 'node:fs/promises';
import type { Strategy } from '../../src/strategy/index.js';
import { dcaStrategyYaml, openBenchEngine, writeStrategiesFile } from '../harness/bench-engine.js';

export type MemoryCycleKind = 'mixed' | 'guard-skip' | 'paused' | 'dry-run';

export interface MemoryRequest {
  databaseUrl: string;
  apiUrl: string;
  apiToken: string;
  strategies: number;
  cycles: number;
  kind: MemoryCycleKind;
  repositoryRoot: string;
}

export interface MemorySample {
  cycles: number;
  rssMb: number;
  heapUsedMb: number;
  heapTotalMb: number;
  externalMb: number;
}

export interface MemoryReport {
  startedMb: number;
  loadedMb: number;
  /** The highest RSS of the process from its start to the end of loading (getrusage): the load's garbage included. */
  loadingPeakMb: number;
  samples: MemorySample[];
  peakRssMb: number;
  seconds: number;
  outcomes: Record<string, number>;
}

const SAMPLES = 50;
/** Cycles dispatched at a time (several times the engine's concurrency, so it never runs dry). */
const BATCH = 200;
/** A yearly slot: the cron tasks exist (as in production) but never fire during the bench. */
const QUIET_SCHEDULE = '0 3 1 1 *';

const gc = (globalThis as { gc?: () => void }).gc;

process.once('message', (request: MemoryRequest) => {
  measure(request).then(
    (report) => process.send!(report, () => process.exit(0)),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
});

async function measure(request: MemoryRequest): Promise<MemoryReport> {
  if (!gc) throw new Error('memory-worker needs --expose-gc');
  const startedMb = settledRssMb();
  const names = Array.from(
    { length: request.strategies },
    (_, i) => `memory-${String(i + 1).padStart(6, '0')}`,
  );
  const file = await writeStrategiesFile(names.map((name) => strategyYaml(name, request.kind)));
  const engine = await openBenchEngine({
    mode: 'run',
    databaseUrl: request.databaseUrl,
    apiUrl: request.apiUrl,
    apiToken: request.apiToken,
    cwd: request.repositoryRoot,
    env: { TREASURY_STRATEGIES: file },
  });
  try {
    const worker = engine.app.worker!;
    const { killSwitch } = engine.app.context;
    if (request.kind === 'paused') await killSwitch.pause('memory bench', 'bench');
    // ru_maxrss, in KiB on Linux: the peak of every moment so far, which no sample catches.
    const loadingPeakMb = round1(process.resourceUsage().maxRSS / 1024);
    const loadedMb = settledRssMb();
    const strategies = worker.strategies;
    const samples: MemorySample[] = [];
    let peakRssMb = loadedMb;
    const every = Math.max(1, Math.floor(request.cycles / SAMPLES));
    const began = performance.now();
    const firstSlot = Date.UTC(2020, 0, 1);
    for (let cycle = 0; cycle < request.cycles; cycle++) {
      const strategy: Strategy = strategies[cycle % strategies.length]!;
      const round = Math.floor(cycle / strategies.length);
      if (request.kind === 'mixed' && cycle % BATCH === 0) {
        // Alternate batches: kill-switch skips (cheap, the claim and record path) and credit-guard skips
        // (balance call, decimals, validation), so 100,000 cycles fit in a few minutes on two cores.
        if ((cycle / BATCH) % 2 === 0) await killSwitch.pause('memory bench', 'bench');
        else await killSwitch.resume('bench');
      }
      worker.scheduler.dispatch(strategy, new Date(firstSlot + round * 60_000), 'schedule');
      // Dispatched cycles wait in the scheduler: a bounded batch keeps the bench from holding memory.
      if ((cycle + 1) % BATCH === 0) await worker.scheduler.settled();
      if ((cycle + 1) % every === 0) {
        await worker.scheduler.settled();
        peakRssMb = Math.max(peakRssMb, process.memoryUsage().rss / 2 ** 20);
        samples.push({ cycles: cycle + 1, ...settledUsage() });
      }
    }
    await worker.scheduler.settled();
    return {
      startedMb,
      loadedMb,
      loadingPeakMb,
      samples,
      peakRssMb: round1(peakRssMb),
      seconds: round1((performance.now() - began) / 1000),
      outcomes: await outcomesOf(engine.app),
    };
  } finally {
    await engine.close();
    await rm(file, { force: true });
  }
}

function strategyYaml(name: string, kind: MemoryCycleKind): string {
  const base = dcaStrategyYaml(name, { schedule: QUIET_SCHEDULE, guards: false, dryRun: kind === 'dry-run' });
  // More credit than the sandbox will ever have: the guard skips every slot after reading the balance.
  return kind === 'guard-skip' || kind === 'mixed'
    ? `${base}guards:\n  minCreditAvailable: "999999999999999"\n`
    : base;
}

async function outcomesOf(app: Awaited<ReturnType<typeof openBenchEngine>>['app']) {
  const outcomes: Record<string, number> = {};
  for (const value of (await app.metrics.cycles.get()).values) {
    const key = `${value.labels.outcome}:${value.labels.reason}`;
    outcomes[key] = (outcomes[key] ?? 0) + value.value;
  }
  return outcomes;
}

/**
 * Memory after full collections, repeated while the committed heap still shrinks (at most four): V8 gives
 * back the pages a collection emptied only at the next one. After loading 10,000 strategies, one collection
 * took the heap from 111.6 MB used (144.6 committed) to 43.6 (117.3), and the next kept 43.6 used in 84.4
 * committed (`--trace-gc`), so a single one measured pages already free, by as much as 35 MB of RSS
 * depending on when the last collection of the load had run.
 */
function settledUsage(): Omit<MemorySample, 'cycles'> {
  gc!();
  let usage = process.memoryUsage();
  for (let more = 0; more < 3; more++) {
    gc!();
    const next = process.memoryUsage();
    const shrank = next.heapTotal < usage.heapTotal;
    usage = next;
    if (!shrank) break;
  }
  return {
    rssMb: round1(usage.rss / 2 ** 20),
    heapUsedMb: round1(usage.heapUsed / 2 ** 20),
    heapTotalMb: round1(usage.heapTotal / 2 ** 20),
    externalMb: round1(usage.external / 2 ** 20),
  };
}

function settledRssMb(): number {
  return settledUsage().rssMb;
}

function round1(value: number): number {
  return Math.round(value * 10) / 10;
}
