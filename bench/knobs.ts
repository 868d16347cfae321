import type { MemoryCycleKind } from './sections/memory-worker.js';

/**
 * Environment knobs of `npm run bench`. Defaults are the full run (< 10 minutes on 2 cores); smaller values
 * give a quick run with the same shape, e.g. BENCH_CYCLES=200 BENCH_BURST=100 BENCH_MEMORY_CYCLES=5000.
 */
export interface BenchKnobs {
  /** Sections to run, from BENCH_SECTIONS (comma-separated); default all. */
  sections: ReadonlySet<SectionName>;
  cycles: number;
  burst: number;
  /** Strategies of the burst-latency section, and replicas of every replica burst. */
  burstLatency: number;
  burst10k: number;
  /** Strategies of the burst-10k-latency section (BENCH_BURST_10K_LATENCY). */
  burst10kLatency: number;
  burstReplicas: number;
  memoryStrategies: number;
  memoryCycles: number;
  memoryKind: MemoryCycleKind;
  codecOpMs: number;
  codecClientMs: number;
  /** Orders the export section inserts and exports (BENCH_EXPORT_ORDERS). */
  exportOrders: number;
  backtestRows: number;
  /** Cycles in the record the console section's pages are timed over (BENCH_CONSOLE_CYCLES). */
  consoleCycles: number;
  output: string;
}

const MEMORY_KINDS = ['mixed', 'guard-skip', 'paused', 'dry-run'] as const;

export const SECTION_NAMES = [
  'cycle',
  'burst',
  'burst-latency',
  'burst-10k',
  'burst-10k-latency',
  'codec',
  'memory',
  'export',
  'backtest',
  'console',
] as const;
export type SectionName = (typeof SECTION_NAMES)[number];

export function readKnobs(env: NodeJS.ProcessEnv = process.env): BenchKnobs {
  return {
    sections: readSections(env.BENCH_SECTIONS),
    cycles: readCount(env, 'BENCH_CYCLES', 1_000),
    burst: readCount(env, 'BENCH_BURST', 1_000),
    burstLatency: readCount(env, 'BENCH_BURST_LATENCY', 1_000),
    burst10k: readCount(env, 'BENCH_BURST_10K', 10_000),
    burst10kLatency: readCount(env, 'BENCH_BURST_10K_LATENCY', 10_000),
    burstReplicas: readCount(env, 'BENCH_BURST_REPLICAS', 3),
    memoryStrategies: readCount(env, 'BENCH_MEMORY_STRATEGIES', 10_000),
    memoryCycles: readCount(env, 'BENCH_MEMORY_CYCLES', 100_000),
    memoryKind: readMemoryKind(env.BENCH_MEMORY_KIND),
    codecOpMs: readCount(env, 'BENCH_CODEC_OP_MS', 500),
    codecClientMs: readCount(env, 'BENCH_CODEC_CLIENT_MS', 2_000),
    exportOrders: readCount(env, 'BENCH_EXPORT_ORDERS', 1_000_000),
    backtestRows: readCount(env, 'BENCH_BACKTEST_ROWS', 525_600),
    consoleCycles: readCount(env, 'BENCH_CONSOLE_CYCLES', 100_000),
    output: env.BENCH_OUTPUT ?? 'bench/results.json',
  };
}

function readCount(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const text = env[name];
  if (text === undefined || text === '') return fallback;
  if (!/^\d+$/.test(text) || Number(text) < 1) {
    throw new Error(`${name} must be a positive integer, got ${JSON.stringify(text)}`);
  }
  return Number(text);
}

function readMemoryKind(text: string | undefined): MemoryCycleKind {
  if (text === undefined || text === '') return 'mixed';
  if (!(MEMORY_KINDS as readonly string[]).includes(text)) {
    throw new Error(
      `BENCH_MEMORY_KIND must be one of ${MEMORY_KINDS.join(', ')}, got ${JSON.stringify(text)}`,
    );
  }
  return text as MemoryCycleKind;
}

function readSections(text: string | undefined): ReadonlySet<SectionName> {
  if (text === undefined || text.trim() === '') return new Set(SECTION_NAMES);
  const names = text.split(',').map((name) => name.trim());
  for (const name of names) {
    if (!(SECTION_NAMES as readonly string[]).includes(name)) {
      throw new Error(
        `BENCH_SECTIONS: unknown section ${JSON.stringify(name)}; known: ${SECTION_NAMES.join(', ')}`,
      );
    }
  }
  return new Set(names as SectionName[]);
}
