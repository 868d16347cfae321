/**
 * `treasury-bot status`: what the worker decided and bought lately, what is still settling, and what needs an
 * operator (unsure cycles, halted strategies, the kill switch). Reads the database only; never the service.
 */
import type { Command } from 'commander';
import { loadSettings } from '../config/index.js';
import { type Cycle, type Database, type OrderRecord, openDatabase } from '../db/index.js';
import { parseCount } from './api-arguments.js';
import { cell, printErrorLine, printJson, printLines, renderTable } from './api-output.js';

export function registerStatusCommands(program: Command): void {
  program
    .command('status')
    .description('recent decisions and orders with their settlement state, unsure cycles, pause state')
    .option('--json', 'print one JSON document on stdout')
    .option('--limit <n>', 'how many recent cycles to show (1 to 1000)', '20')
    .action((flags: { json?: boolean; limit: string }) => runStatus(flags));
}

interface StatusReport {
  paused: { paused: boolean; reason: string | null; since: Date | null; by: string | null };
  haltedStrategies: { name: string; since: Date | null; reason: string | null }[];
  recentCycles: ReturnType<typeof cycleView>[];
  unsureCycles: ReturnType<typeof cycleView>[];
  openOrders: ReturnType<typeof orderView>[];
}

async function runStatus(flags: { json?: boolean; limit: string }): Promise<void> {
  let database: Database | undefined;
  try {
    const limit = parseCount('--limit', flags.limit, 1000) ?? 20;
    const settings = loadSettings({ env: process.env });
    database = await openDatabase({ url: settings.database.url, dataDir: settings.database.dataDir });
    const report = await readStatus(database, limit, new Date());
    if (flags.json) printJson(report, []);
    else printLines(renderStatus(report), []);
  } catch (error) {
    printErrorLine(error, []);
    process.exitCode = 1;
  } finally {
    await database?.close();
  }
}

export async function readStatus(database: Database, limit: number, now: Date): Promise<StatusReport> {
  const [control, halted, recent, unsure, open] = await Promise.all([
    database.control.get(),
    database.strategies.listHalted(),
    database.cycles.listRecent({ limit }),
    database.cycles.listByState('unsure', 1000),
    database.orders.listOpen(1000),
  ]);
  return {
    paused: {
      paused: control.paused,
      reason: control.reason,
      since: control.changedAt,
      by: control.changedBy,
    },
    haltedStrategies: halted.map((strategy) => ({
      name: strategy.name,
      since: strategy.haltedAt,
      reason: strategy.haltReason,
    })),
    recentCycles: recent.map(cycleView),
    unsureCycles: unsure.map(cycleView),
    openOrders: open.map((order) => orderView(order, now)),
  };
}

function cycleView(cycle: Cycle) {
  return {
    strategy: cycle.strategy,
    slot: cycle.slot,
    state: cycle.state,
    reason: cycle.reasonCode,
    errorCode: cycle.errorCode,
    quoteId: cycle.quoteId,
    orderId: cycle.serviceOrderId,
    price: cycle.price,
    amount: cycle.amount,
    totalCost: cycle.totalCost,
    updatedAt: cycle.updatedAt,
  };
}

function orderView(order: OrderRecord, now: Date) {
  return {
    orderId: order.serviceOrderId,
    origin: order.origin,
    status: order.status,
    symbol: order.symbol,
    amount: order.amount,
    price: order.price,
    placedAt: order.serviceTimestamp,
    ageSeconds: Math.max(0, Math.round((now.getTime() - order.serviceTimestamp.getTime()) / 1000)),
    lastProgressAt: order.lastProgressAt,
    stuck: order.stuckFlaggedAt !== null,
  };
}

function renderStatus(report: StatusReport): string[] {
  const { paused } = report;
  const lines = [
    paused.paused
      ? `PAUSED since ${cell(paused.since)} by ${paused.by ?? '-'}: ${paused.reason ?? 'no reason given'}`
      : 'running (kill switch off)',
  ];
  for (const halted of report.haltedStrategies) {
    lines.push(`HALTED ${halted.name} since ${cell(halted.since)}: ${halted.reason ?? '-'}`);
  }
  const cycleColumns = ['strategy', 'slot', 'state', 'reason', 'quoteId', 'orderId', 'price', 'totalCost'];
  const cycleRow = (cycle: ReturnType<typeof cycleView>) =>
    [cycle.strategy, cycle.slot, cycle.state, cycle.reason ?? cycle.errorCode, cycle.quoteId, cycle.orderId]
      .map(cell)
      .concat([cell(cycle.price), cell(cycle.totalCost)]);
  lines.push('', `recent cycles (${report.recentCycles.length})`);
  lines.push(...renderTable(cycleColumns, report.recentCycles.map(cycleRow)));
  lines.push('', `unsure cycles awaiting reconciliation (${report.unsureCycles.length})`);
  if (report.unsureCycles.length > 0)
    lines.push(...renderTable(cycleColumns, report.unsureCycles.map(cycleRow)));
  lines.push('', `open orders (${report.openOrders.length})`);
  if (report.openOrders.length > 0) {
    lines.push(
      ...renderTable(
        ['orderId', 'status', 'age', 'amount', 'price', 'origin', 'stuck'],
        report.openOrders.map((order) => [
          order.orderId,
          order.status,
          `${order.ageSeconds}s`,
          cell(order.amount),
          cell(order.price),
          order.origin,
          order.stuck ? 'STUCK' : '',
        ]),
      ),
    );
  }
  return lines;
}
