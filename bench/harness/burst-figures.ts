/**
 * The figures every burst section prints, measured one way whether the burst runs in a Worker of the bench
 * process (`burst`) or in replica processes (`burst-latency`, `burst-10k`, `burst-10k-latency`):
 *
 * - orders placed and quotes expired, from outside the worker: the quotes the database recorded for the
 *   burst's strategies, against the orders the sandbox's ledger holds for them;
 * - the lag of each order after the instant its strategies were due (`createdAt` in the ledger: when the order
 *   reached the service): first, median, p99 and last;
 * - the worker processes' CPU from that instant until every cycle was final, per 1,000 orders placed;
 * - per worker process, its peak RSS up to the instant (start and loading, garbage included), its peak over
 *   the burst, and its RSS after it (/proc: the kernel's high-water mark catches every moment, no sampling).
 */
import type postgres from 'postgres';
import { type ProcessMemory, processCpuSeconds, processMemory, resetPeakRss } from './process-usage.js';
import { formatMs, type ReportRow } from './report.js';
import type { SandboxProcess } from './sandbox-process.js';
import { percentile, round } from './stats.js';

export interface BurstOrders {
  ordersPlaced: number;
  /** Quotes recorded for the burst's cycles with no order at the service. */
  expiredQuotes: number;
  lagMs: { first: number; p50: number; p99: number; last: number };
}

/** The memory of one worker process over a burst, in MB. */
export interface WorkerMemory {
  /** Highest RSS from the process start (or the section's, in the bench process) until the burst was due. */
  loadingPeakMb: number;
  /** Highest RSS from the due instant until every cycle was final. */
  burstPeakMb: number;
  /** RSS once every cycle was final. */
  afterMb: number;
}

export interface BurstUsage {
  /** The worker processes' CPU seconds from the due instant until every cycle was final. */
  cpuSeconds: number;
  workers: WorkerMemory[];
}

/** Goals shown beside a section's figures with a verdict; the figures without one are reported only. */
export interface BurstGoals {
  lastOrderMs?: number;
  /** Every worker process's peak RSS, loading and burst alike: what a memory limit would meet. */
  peakRssMb?: number;
}

/**
 * Reads the worker processes at the instant the burst is due: CPU so far, and the peak RSS of their start,
 * which it then resets so that the next reading's peak is the burst's. Returns the reading at the end, to be
 * taken as soon as every cycle is final (before the bench's own reads, which in `burst` share the process).
 */
export async function startBurstUsage(pids: readonly (number | undefined)[]) {
  const cpuAtDue = await sumCpuSeconds(pids);
  const atDue = await Promise.all(pids.map(processMemory));
  await Promise.all(pids.map(resetPeakRss));
  return async (): Promise<BurstUsage> => {
    const cpuSeconds = round((await sumCpuSeconds(pids)) - cpuAtDue, 2);
    const atEnd: ProcessMemory[] = await Promise.all(pids.map(processMemory));
    return {
      cpuSeconds,
      workers: atEnd.map((end, index) => ({
        loadingPeakMb: atDue[index]!.peakRssMb,
        burstPeakMb: end.peakRssMb,
        afterMb: end.rssMb,
      })),
    };
  };
}

export function cpuSecondsPer1000Orders(usage: BurstUsage, orders: BurstOrders): number {
  return orders.ordersPlaced > 0 ? round((usage.cpuSeconds / orders.ordersPlaced) * 1_000, 2) : Number.NaN;
}

async function sumCpuSeconds(pids: readonly (number | undefined)[]): Promise<number> {
  const each = await Promise.all(pids.map(processCpuSeconds));
  return each.reduce((sum, seconds) => sum + seconds, 0);
}

/** The orders of the named strategies' cycles at the service, and their lags after `dueAt`. */
export async function readBurstOrders(
  sql: postgres.Sql,
  sandbox: SandboxProcess,
  strategies: readonly string[],
  dueAt: Date,
): Promise<BurstOrders> {
  const quotes = await sql<{ quoteId: string }[]>`
    select q.quote_id as "quoteId" from quotes q join cycles c on c.id = q.cycle_id
    where c.strategy = any(${strategies as string[]})`;
  const quoteIds = new Set(quotes.map((row) => row.quoteId));
  const placed = (await sandbox.ledger()).filter((order) => quoteIds.has(order.quoteId));
  const ordered = new Set(placed.map((order) => order.quoteId));
  const lags = placed.map((order) => Date.parse(order.createdAt) - dueAt.getTime()).sort((a, b) => a - b);
  return {
    ordersPlaced: placed.length,
    expiredQuotes: [...quoteIds].filter((quoteId) => !ordered.has(quoteId)).length,
    lagMs: {
      first: lags[0] ?? Number.NaN,
      p50: round(percentile(lags, 0.5), 1),
      p99: round(percentile(lags, 0.99), 1),
      last: lags.at(-1) ?? Number.NaN,
    },
  };
}

/** The rows every burst section prints, in the same words, so that their columns read alike. */
export function burstRows(
  section: string,
  figures: { strategies: number; orders: BurstOrders; usage: BurstUsage; states: string },
  goals: BurstGoals = {},
): ReportRow[] {
  const { strategies, orders, usage } = figures;
  const { lagMs } = orders;
  const highestPeak = Math.max(...usage.workers.flatMap((w) => [w.loadingPeakMb, w.burstPeakMb]));
  return [
    {
      section,
      metric: 'orders placed',
      value: `${orders.ordersPlaced} (${figures.states})`,
      target: `all ${strategies}`,
      met: orders.ordersPlaced === strategies,
    },
    {
      section,
      metric: 'expired quotes (recorded, no order at the service)',
      value: String(orders.expiredQuotes),
      target: '0',
      met: orders.expiredQuotes === 0,
    },
    {
      section,
      metric: 'order lag after the due instant: first / median / p99 / last',
      value: [lagMs.first, lagMs.p50, lagMs.p99, lagMs.last].map(formatMs).join(' / '),
      ...(goals.lastOrderMs === undefined
        ? {}
        : { target: `last <= ${formatMs(goals.lastOrderMs)}`, met: lagMs.last <= goals.lastOrderMs }),
    },
    {
      section,
      metric: `CPU of the worker process${usage.workers.length > 1 ? 'es' : ''} per 1,000 orders placed`,
      value: `${cpuSecondsPer1000Orders(usage, orders)} s (${usage.cpuSeconds} s for ${orders.ordersPlaced})`,
    },
    {
      section,
      metric: 'RSS per worker process, MB: peak loading / peak burst / after',
      value: usage.workers.map((w) => `${w.loadingPeakMb} / ${w.burstPeakMb} / ${w.afterMb}`).join('; '),
      ...(goals.peakRssMb === undefined
        ? {}
        : { target: `peak <= ${goals.peakRssMb} MB`, met: highestPeak <= goals.peakRssMb }),
    },
  ];
}
