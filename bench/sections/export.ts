/**
 * The accounting export at scale: N orders (default 1,000,000, each with its cycle, quote and one
 * settlement step) inserted with generate_series, then `export orders` of all of them as CSV to a file in
 * a plain-node child process (export-worker.ts), which reports its time and peak RSS. Targets: at most
 * 30 s and 150 MB for a million orders. The orders also have to come out complete: the row count is
 * checked against N.
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { createBenchDatabase } from '../harness/bench-database.js';
import type { ReportRow } from '../harness/report.js';
import { round } from '../harness/stats.js';
import { transpileForNode } from '../harness/transpile.js';
import type { ExportReport, ExportRequest } from './export-worker.js';

export interface ExportResult {
  orders: number;
  insertSeconds: number;
  exportSeconds: number;
  exportCpuSeconds: number;
  peakRssMb: number;
  fileMb: number;
  targets: { seconds: number; rssMb: number };
}

const TARGETS = { seconds: 30, rssMb: 150 };

/** One strategy, then N placed cycles with their quote, order and settlement step, one a minute. */
async function insertOrders(databaseUrl: string, count: number): Promise<void> {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  try {
    await sql.begin(async (tx) => {
      await tx`insert into strategies (name, kind, config, config_hash, first_seen_at, last_seen_at)
               values ('bench-export', 'dca', '{}', 'bench-v1', now(), now()) on conflict do nothing`;
      await tx.unsafe(`
        insert into cycles (strategy, slot, trigger, state, owner, quote_id, amount, price, total_cost,
                            service_order_id, claimed_at, updated_at, submitted_at, finished_at)
        select 'bench-export', timestamptz '2026-01-01' + n * interval '1 minute', 'schedule', 'placed', 'bench',
               'Q' || lpad(n::text, 8, '0'), 1000.00, 5.4000 + (n % 100) * 0.0001, 999.99,
               'order-' || n, now(), now(), now(), now()
        from generate_series(1, ${count}) n`);
      await tx.unsafe(`
        insert into quotes (cycle_id, quote_id, symbol, amount, price, total_cost, total_filled,
                            requested_at, received_at, deadline_at)
        select c.id, c.quote_id, 'USDTBRL', c.amount, c.price, c.total_cost, round(999.99 / c.price, 6),
               c.slot, c.slot, c.slot + interval '4 seconds'
        from cycles c where c.strategy = 'bench-export'`);
      await tx.unsafe(`update cycles c set quote_record_id = q.id from quotes q where q.cycle_id = c.id`);
      await tx.unsafe(`
        insert into orders (service_order_id, cycle_id, origin, quote_id, symbol, amount, price, side,
                            service_timestamp, status, expected_amount, received_amount, withdrawn_amount,
                            last_tracking, created_at, updated_at, last_progress_at, next_check_at, settled_at)
        select c.service_order_id, c.id, 'cycle', c.quote_id, 'USDTBRL', c.amount, c.price, 'BUY', c.slot,
               'settled', 999.99, 999.99, q.total_filled,
               jsonb_build_object('withdrawal', jsonb_build_object('network', 'tron',
                 'transactionId', md5(c.id::text) || md5(c.quote_id))),
               c.slot, c.slot, c.slot, c.slot, c.slot + interval '10 minutes'
        from cycles c join quotes q on q.id = c.quote_record_id where c.strategy = 'bench-export'`);
      await tx.unsafe(`
        insert into settlement_events (order_id, source, from_status, to_status, expected_amount,
                                       received_amount, withdrawn_amount, recorded_at)
        select o.id, 'poll', 'pending', 'settled', o.expected_amount, o.received_amount, o.withdrawn_amount,
               o.settled_at
        from orders o`);
    });
    await sql.unsafe('analyze');
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/**
 * In a database of its own: the orders other sections placed (unsettled, inside the exported period) would
 * otherwise break the insert and the count the export is checked against.
 */
export async function runExportSection(count: number) {
  const database = await createBenchDatabase('tb_bench_export');
  try {
    return await measureExport(database.url, count);
  } finally {
    await database.drop();
  }
}

async function measureExport(databaseUrl: string, count: number) {
  const insertStarted = performance.now();
  await insertOrders(databaseUrl, count);
  const insertSeconds = (performance.now() - insertStarted) / 1000;

  const entry = await transpileForNode('bench/sections/export-worker.ts');
  const output = join(tmpdir(), `treasury-bench-export-${process.pid}.csv`);
  // No execArgv: the parent runs under tsx, whose loader thread would count in the child's RSS.
  const child = fork(entry, [], { execArgv: [], stdio: 'inherit' });
  const request: ExportRequest = { databaseUrl, output };
  child.send(request);
  const [report] = (await Promise.race([
    once(child, 'message'),
    once(child, 'exit').then(([code]) => {
      throw new Error(`export worker exited with ${code} before reporting`);
    }),
  ])) as [ExportReport];
  await once(child, 'exit');
  const fileMb = (await stat(output)).size / 1024 / 1024;
  await rm(output, { force: true });
  if (report.orders !== count) throw new Error(`the export wrote ${report.orders} orders of ${count}`);

  const result: ExportResult = {
    orders: count,
    insertSeconds: round(insertSeconds, 1),
    exportSeconds: round(report.seconds, 1),
    exportCpuSeconds: round(report.cpuSeconds, 1),
    peakRssMb: round(report.peakRssMb, 0),
    fileMb: round(fileMb, 0),
    targets: TARGETS,
  };
  const scale = count / 1_000_000;
  const rows: ReportRow[] = [
    {
      section: 'export',
      metric: `orders inserted (generate_series), s`,
      value: String(result.insertSeconds),
    },
    {
      section: 'export',
      metric: `export orders CSV, ${count} orders, s`,
      value: String(result.exportSeconds),
      target: `<= ${round(TARGETS.seconds * scale, 1)}`,
      met: result.exportSeconds <= TARGETS.seconds * scale,
    },
    {
      section: 'export',
      metric: 'export CPU (exporting process), s',
      value: String(result.exportCpuSeconds),
    },
    {
      section: 'export',
      metric: 'export peak RSS, MB',
      value: String(result.peakRssMb),
      target: `<= ${TARGETS.rssMb}`,
      met: result.peakRssMb <= TARGETS.rssMb,
    },
    { section: 'export', metric: 'CSV file, MB', value: String(result.fileMb) },
  ];
  return { result, rows };
}
