/**
 * RSS of a full worker with S strategies loaded, and after C cycles (see memory-worker.ts, which runs in
 * its own plain-node process). Targets: at most 200 MB, and at most 10% growth over the second half.
 *
 * RSS after a full GC still swings by tens of MB from one sample to the next (V8 and malloc keep and
 * return pages as they please), so growth compares medians of windows rather than two single samples:
 * the samples around the middle of the run against the last fifth.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { REPOSITORY_ROOT } from '../harness/bench-engine.js';
import { containerRows, createMemoryLimit, deployedContainer, insideLimit } from '../harness/memory-limit.js';
import type { ReportRow } from '../harness/report.js';
import type { SandboxProcess } from '../harness/sandbox-process.js';
import { percentile, round } from '../harness/stats.js';
import { transpileForNode } from '../harness/transpile.js';
import type { MemoryCycleKind, MemoryReport, MemoryRequest, MemorySample } from './memory-worker.js';

export interface MemoryResult {
  strategies: number;
  cycles: number;
  cycleKind: string;
  seconds: number;
  outcomes: Record<string, number>;
  rssStartedMb: number;
  rssLoadedMb: number;
  /** The highest RSS from the process start to the end of loading, before any collection (getrusage). */
  rssLoadingPeakMb: number;
  /** Medians of the samples around the middle (40-60% of the cycles) and of the last fifth. */
  rssMidMb: number;
  rssEndMb: number;
  rssPeakMb: number;
  secondHalfGrowthPct: number;
  heapUsedMidMb: number;
  heapUsedEndMb: number;
  heapGrowthPct: number;
  samples: MemorySample[];
  /** The deployment's memory limit the worker ran under (memory-limit.ts); null where none could be set. */
  memoryLimitMib: number | null;
  /** The runtime's settings it ran with, from the same container. */
  runtimeEnv: Record<string, string>;
  targets: { rssMb: number; secondHalfGrowthPct: number };
}

const KIND_TEXT: Record<MemoryCycleKind, string> = {
  'dry-run': 'dry-run cycles (claim, budget reads, quote, decision, recorded dry_run; no order)',
  'guard-skip': 'credit-guard skips (claim, budget reads, balance call, recorded skip; no quote)',
  paused: 'kill-switch skips (claim, recorded skip; no reads, no HTTP)',
  mixed:
    'alternate batches of kill-switch skips and credit-guard skips (claim, budget reads, balance call, recorded skip)',
};

export async function runMemorySection(
  sandbox: SandboxProcess,
  databaseUrl: string,
  settings: { strategies: number; cycles: number; kind: MemoryCycleKind },
) {
  // Plain node on transpiled files, as production runs dist/: tsx's loader thread would add to the RSS.
  const entry = await transpileForNode('bench/sections/memory-worker.ts');
  // Under the deployment's memory limit and runtime settings, as the burst's replicas (memory-limit.ts).
  const container = await deployedContainer();
  const limit = await createMemoryLimit('treasury-memory', container.memoryLimitMib);
  const [command, args] = insideLimit(limit, process.execPath, ['--expose-gc', entry]);
  const request: MemoryRequest = {
    databaseUrl,
    apiUrl: sandbox.url,
    apiToken: sandbox.token,
    repositoryRoot: REPOSITORY_ROOT,
    ...settings,
  };
  let report: MemoryReport;
  try {
    const child = spawn(command, args, {
      stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
      env: { ...process.env, ...container.runtimeEnv },
    });
    child.send(request);
    [report] = (await Promise.race([
      once(child, 'message'),
      once(child, 'exit').then(([code]) => {
        throw new Error(`memory worker exited with ${code} before reporting`);
      }),
    ])) as [MemoryReport];
    await once(child, 'exit');
  } finally {
    // The worker has exited either way: its cgroup is empty.
    await limit?.remove();
  }

  const { samples } = report;
  const middle = window(samples, 0.4, 0.6);
  const end = window(samples, 0.8, 1);
  const result: MemoryResult = {
    strategies: settings.strategies,
    cycles: settings.cycles,
    cycleKind: KIND_TEXT[settings.kind],
    seconds: report.seconds,
    outcomes: report.outcomes,
    rssStartedMb: report.startedMb,
    rssLoadedMb: report.loadedMb,
    rssLoadingPeakMb: report.loadingPeakMb,
    rssMidMb: median(middle.map((sample) => sample.rssMb)),
    rssEndMb: median(end.map((sample) => sample.rssMb)),
    rssPeakMb: report.peakRssMb,
    secondHalfGrowthPct: 0,
    heapUsedMidMb: median(middle.map((sample) => sample.heapUsedMb)),
    heapUsedEndMb: median(end.map((sample) => sample.heapUsedMb)),
    heapGrowthPct: 0,
    samples,
    memoryLimitMib: limit?.mib ?? null,
    runtimeEnv: container.runtimeEnv,
    targets: { rssMb: 200, secondHalfGrowthPct: 10 },
  };
  result.secondHalfGrowthPct = growthPct(result.rssMidMb, result.rssEndMb);
  result.heapGrowthPct = growthPct(result.heapUsedMidMb, result.heapUsedEndMb);
  return { result, rows: rowsOf(result) };
}

function window(samples: readonly MemorySample[], from: number, to: number): MemorySample[] {
  const total = samples.at(-1)?.cycles ?? 0;
  const inside = samples.filter((sample) => sample.cycles >= total * from && sample.cycles <= total * to);
  return inside.length > 0 ? inside : samples.slice(-1);
}

function median(values: readonly number[]): number {
  return round(
    percentile(
      [...values].sort((a, b) => a - b),
      0.5,
    ),
    1,
  );
}

function growthPct(from: number, to: number): number {
  return from > 0 ? round(((to - from) / from) * 100, 1) : 0;
}

function rowsOf(result: MemoryResult): ReportRow[] {
  const highest = Math.max(result.rssPeakMb, result.rssEndMb, result.rssLoadedMb);
  return [
    { section: 'memory', metric: 'cycle kind', value: result.cycleKind },
    ...containerRows('memory', result, ''),
    {
      section: 'memory',
      metric: `RSS with ${result.strategies} strategies loaded, before any cycle`,
      value: `${result.rssLoadedMb} MB (process start ${result.rssStartedMb} MB)`,
    },
    {
      section: 'memory',
      metric: 'highest RSS while loading, garbage included (getrusage)',
      value: `${result.rssLoadingPeakMb} MB`,
    },
    {
      section: 'memory',
      metric: `RSS after ${result.cycles} cycles (${result.seconds} s) / peak`,
      value: `${result.rssEndMb} MB / ${result.rssPeakMb} MB`,
      target: `<= ${result.targets.rssMb} MB`,
      met: highest <= result.targets.rssMb,
    },
    {
      section: 'memory',
      metric: 'growth over the second half: RSS (heap)',
      value: `${result.secondHalfGrowthPct}% (heap ${result.heapUsedMidMb} -> ${result.heapUsedEndMb} MB, ${result.heapGrowthPct}%)`,
      target: `<= ${result.targets.secondHalfGrowthPct}%`,
      met: result.secondHalfGrowthPct <= result.targets.secondHalfGrowthPct,
    },
  ];
}
