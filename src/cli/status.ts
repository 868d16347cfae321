/**
 * `treasury-bot status`: what the worker decided and bought lately, what is still settling, and what needs an
 * operator (unsure cycles, halted strategies, the kill switch). Reads the database only; never the service.
 */
import type { Command } from 'commander';
import type { Cycle, Database, FigureDifference, OrderRecord } from '../db/index.js';
import { withCommandDatabase } from './command-database.js';
import { cell, parseCount, printErrorLine, printJson, printLines, renderTable } from './terminal.js';

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
  discrepancies: (ReturnType<typeof cycleView> & { discrepancy: FigureDifference[] })[];
  replicas: {
    id: string;
    host: string;
    pid: number;
    startedAt: Date;
    lastHeartbeat: Date;
    inFlightCycles: number;
    /** Requests per second the replica keeps to at the service (learnt from 429s, capped by api.rateLimit); null: none. */
    apiPace: number | null;
  }[];
  openOrders: ReturnType<typeof orderView>[];
}

async function runStatus(flags: { json?: boolean; limit: string }): Promise<void> {
  try {
    const limit = parseCount('--limit', flags.limit, 1000) ?? 20;
    const report = await withCommandDatabase((database) => readStatus(database, limit, new Date()));
    if (flags.json) printJson(report, []);
    else printLines(renderStatus(report), []);
  } catch (error) {
    printErrorLine(error, []);
    process.exitCode = 1;
  }
}

export async function readStatus(database: Database, limit: number, now: Date): Promise<StatusReport> {
  const [control, halted, recent, unsure, open, flagged, replicas, inFlight] = await Promise.all([
    database.control.get(),
    database.strategies.listHalted(),
    database.cycles.listRecent({ limit }),
    database.cycles.listByState('unsure', 1000),
    database.orders.listOpen(1000),
    database.cycles.listWithDiscrepancy(100),
    database.replicas.list(),
    Promise.all(
      (['claimed', 'quoted', 'submitting'] as const).map((state) => database.cycles.listByState(state, 1000)),
    ),
  ]);
  const inFlightBy = new Map<string, number>();
  for (const cycle of inFlight.flat()) inFlightBy.set(cycle.owner, (inFlightBy.get(cycle.owner) ?? 0) + 1);
  const settlement = await database.orders.statusOfCycles(recent.map((cycle) => cycle.id));
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
    // The settlements are read after the cycles, while the worker goes on: an order recorded in between is
    // left out for a cycle whose row, as read, names no order, so that each line is one moment's view.
    recentCycles: recent.map((cycle) =>
      cycleView(cycle, cycle.serviceOrderId === null ? null : (settlement.get(cycle.id) ?? null)),
    ),
    unsureCycles: unsure.map((cycle) => cycleView(cycle, null)),
    replicas: replicas.map((replica) => ({
      id: replica.id,
      host: replica.host,
      pid: replica.pid,
      startedAt: replica.startedAt,
      lastHeartbeat: replica.heartbeatAt,
      inFlightCycles: inFlightBy.get(replica.id) ?? 0,
      apiPace: replica.apiPace,
    })),
    discrepancies: flagged.map((cycle) => ({
      ...cycleView(cycle, null),
      discrepancy: cycle.discrepancy ?? [],
    })),
    openOrders: open.map((order) => orderView(order, now)),
  };
}

/** `settlement`: the status of the cycle's order (`pending` … `settled`), null when it has none. */
function cycleView(cycle: Cycle, settlement: string | null) {
  return {
    strategy: cycle.strategy,
    slot: cycle.slot,
    state: cycle.state,
    settlement,
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

/** A blank line, the title with its count, and the table below it when it has rows. */
function section(title: string, columns: readonly string[], rows: readonly (readonly string[])[]): string[] {
  return ['', `${title} (${rows.length})`, ...(rows.length > 0 ? renderTable(columns, rows) : [])];
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
  lines.push(
    ...section(
      'replicas',
      ['id', 'host', 'pid', 'started', 'lastHeartbeat', 'inFlight', 'apiPace'],
      report.replicas.map((replica) => [
        replica.id,
        replica.host,
        String(replica.pid),
        cell(replica.startedAt),
        cell(replica.lastHeartbeat),
        String(replica.inFlightCycles),
        replica.apiPace === null ? 'none' : `${replica.apiPace}/s`,
      ]),
    ),
  );
  const cycleColumns = [
    'strategy',
    'slot',
    'state',
    'settlement',
    'reason',
    'quoteId',
    'orderId',
    'price',
    'totalCost',
  ];
  const cycleRow = (cycle: ReturnType<typeof cycleView>) =>
    [
      cycle.strategy,
      cycle.slot,
      cycle.state,
      cycle.settlement,
      cycle.reason ?? cycle.errorCode,
      cycle.quoteId,
      cycle.orderId,
    ]
      .map(cell)
      .concat([cell(cycle.price), cell(cycle.totalCost)]);
  lines.push('', `recent cycles (${report.recentCycles.length})`);
  lines.push(...renderTable(cycleColumns, report.recentCycles.map(cycleRow)));
  lines.push(
    ...section('unsure cycles awaiting reconciliation', cycleColumns, report.unsureCycles.map(cycleRow)),
  );
  if (report.discrepancies.length > 0) {
    lines.push(
      '',
      `DISCREPANCIES: orders the service reports with other figures (${report.discrepancies.length})`,
    );
    for (const cycle of report.discrepancies) {
      const figures = cycle.discrepancy.map((d) => `${d.field} ${d.got} (asked ${d.expected})`).join(', ');
      lines.push(`${cycle.strategy} ${cell(cycle.slot)} order ${cycle.orderId ?? '-'}: ${figures}`);
    }
  }
  lines.push(
    ...section(
      'open orders',
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
  return lines;
}
