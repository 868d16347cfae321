/**
 * `treasury-bot status`: what the worker decided and bought lately, what is still settling, what needs an
 * operator (unsure cycles, halted strategies, the kill switch, missed targets) and where each target stands.
 * Reads the database only; never the service.
 */
import type { Command } from 'commander';
import type { StatusReport } from '../control/index.js';
import type { Decimal } from '../money.js';
import { withCommandDatabase } from './command-database.js';
import {
  ACCOUNT_OPTION,
  accountScope,
  cell,
  parseCount,
  printErrorLine,
  printJson,
  printLines,
  renderTable,
} from './terminal.js';

interface StatusFlags {
  json?: boolean;
  limit: string;
  account?: string;
}

export function registerStatusCommands(program: Command): void {
  program
    .command('status')
    .description(
      'recent decisions and orders with their settlement state, unsure cycles, pause state, targets; each row names its account',
    )
    .option('--json', 'print one JSON document on stdout')
    .option('--limit <n>', 'how many recent cycles to show (1 to 1000)', '20')
    .option(...ACCOUNT_OPTION)
    .action((flags: StatusFlags) => runStatus(flags));
}

async function runStatus(flags: StatusFlags): Promise<void> {
  try {
    const limit = parseCount('--limit', flags.limit, 1000) ?? 20;
    const { readStatus } = await import('../control/index.js');
    const report = await withCommandDatabase(async (database, settings) =>
      readStatus(database, await accountScope(flags.account, settings), limit, new Date()),
    );
    if (flags.json) printJson(report, []);
    else printLines(renderStatus(report), []);
  } catch (error) {
    printErrorLine(error, []);
    process.exitCode = 1;
  }
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
    lines.push(
      `HALTED ${halted.name} (account ${halted.account}) since ${cell(halted.since)}: ${halted.reason ?? '-'}`,
    );
  }
  for (const target of report.targets.filter((shown) => shown.state === 'missed')) {
    lines.push(
      `MISSED target ${target.name} (account ${target.account}): ${cell(target.left)} of ${cell(target.total)} left ${target.measure === 'spend' ? 'to spend' : 'to receive'} when its window ended ${cell(target.window.end)}`,
    );
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
    'account',
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
  const cycleRow = (cycle: StatusReport['recentCycles'][number]) =>
    [
      cycle.account,
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
      lines.push(
        `${cycle.account} ${cycle.strategy} ${cell(cycle.slot)} order ${cycle.orderId ?? '-'}: ${figures}`,
      );
    }
  }
  lines.push(
    ...section(
      'targets',
      [
        'account',
        'name',
        'state',
        'measure',
        'done',
        'total',
        'done%',
        'spent',
        'received',
        'againstLine',
        'avgPaid',
        'avgQuoted',
        'projectedFinish',
        'windowEnd',
      ],
      report.targets.map((target) => [
        target.account,
        target.name,
        target.state,
        target.measure,
        cell(target.done),
        cell(target.total),
        `${cell(target.percentDone)}%`,
        cell(target.spent),
        cell(target.received),
        target.state === 'active' ? againstLine(target.ahead) : '-',
        cell(target.averagePrice),
        cell(target.quoteAverage),
        cell(target.projectedFinish),
        cell(target.window.end),
      ]),
    ),
  );
  lines.push(
    ...section(
      'open orders',
      ['account', 'orderId', 'status', 'age', 'amount', 'price', 'origin', 'stuck'],
      report.openOrders.map((order) => [
        order.account,
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

/**
 * `ahead` as words: how far ahead of the straight line, or behind it. Shown while the window runs: before,
 * the line is at zero; after, it is at the total, and what is short is `left`.
 */
function againstLine(ahead: Decimal): string {
  if (ahead.isZero()) return 'on the line';
  return ahead.isPositive() ? `${cell(ahead)} ahead` : `${cell(ahead.negated())} behind`;
}
