/**
 * `treasury-bot backtest` at scale: a year of minute prices (generated here from a fixed seed, 525,600 rows)
 * and the 10 strategies of backtest-strategies.yaml (thresholds checking every 1 to 10 minutes, DCAs from
 * every 15 minutes to weekly, budgets, cooldowns and credit guards, five time zones). The work runs in a
 * child on plain node (backtest-worker.ts). Targets: the whole run in at most 10 s and 300 MB peak RSS.
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { priceWalkCsv } from '../../examples/backtest/price-walk.js';
import { formatRate, type ReportRow } from '../harness/report.js';
import { round } from '../harness/stats.js';
import { transpileForNode } from '../harness/transpile.js';
import type { BacktestReportFigures, BacktestRequest } from './backtest-worker.js';

export interface BacktestResult extends BacktestReportFigures {
  seed: number;
  strategies: number;
  rowsPerSec: number;
  slotsPerSec: number;
  targets: { seconds: number; rssMb: number };
}

const SEED = 2026;
const TARGETS = { seconds: 10, rssMb: 300 };
const STRATEGIES = fileURLToPath(new URL('./backtest-strategies.yaml', import.meta.url));

export async function runBacktestSection(rows: number) {
  const folder = await mkdtemp(join(tmpdir(), 'tb-bench-backtest-'));
  try {
    const prices = join(folder, 'prices.csv');
    await writeFile(
      prices,
      priceWalkCsv({ seed: SEED, start: '2025-01-01T00:00:00Z', rows, stepMinutes: 1 }),
    );
    const entry = await transpileForNode('bench/sections/backtest-worker.ts');
    const child = fork(entry, [], { stdio: 'inherit' });
    const request: BacktestRequest = { prices, strategies: STRATEGIES };
    child.send(request);
    const [figures] = (await Promise.race([
      once(child, 'message'),
      once(child, 'exit').then(([code]) => {
        throw new Error(`backtest worker exited with ${code} before reporting`);
      }),
    ])) as [BacktestReportFigures];
    await once(child, 'exit');
    const result: BacktestResult = {
      seed: SEED,
      strategies: 10,
      ...figures,
      rowsPerSec: round(figures.rows / (figures.totalMs / 1000), 0),
      slotsPerSec: round(figures.slots / (figures.runMs / 1000), 0),
      targets: TARGETS,
    };
    const seconds = figures.totalMs / 1000;
    const reportRows: ReportRow[] = [
      { section: 'backtest', metric: 'rows × strategies', value: `${figures.rows} × 10` },
      { section: 'backtest', metric: 'slots decided', value: String(figures.slots) },
      {
        section: 'backtest',
        metric: 'read + check the series',
        value: `${(figures.readMs / 1000).toFixed(2)} s`,
      },
      {
        section: 'backtest',
        metric: 'whole run (read, rules, report)',
        value: `${seconds.toFixed(2)} s`,
        target: `<= ${TARGETS.seconds} s`,
        met: seconds <= TARGETS.seconds,
      },
      { section: 'backtest', metric: 'CPU', value: `${(figures.cpuMs / 1000).toFixed(2)} s` },
      { section: 'backtest', metric: 'rows per second', value: formatRate(result.rowsPerSec) },
      { section: 'backtest', metric: 'slots per second', value: formatRate(result.slotsPerSec) },
      {
        section: 'backtest',
        metric: 'peak RSS',
        value: `${figures.peakRssMb.toFixed(0)} MB`,
        target: `<= ${TARGETS.rssMb} MB`,
        met: figures.peakRssMb <= TARGETS.rssMb,
      },
    ];
    return { result, rows: reportRows };
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}
