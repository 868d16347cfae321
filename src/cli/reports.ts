/**
 * Reports and accounting: `report` (what was bought, at what average cost), `export orders` (the ledger
 * file) and `reconcile-report` (do our records, the service's orders, settlement and balances agree).
 * Arguments are checked before anything opens; a bad one is one line on stderr and exit 1.
 * `reconcile-report` exits 3 when it finds differences. `--account NAME` narrows each to one account's rows
 * (and, for the reconciliation, to that account's service); every row names its account.
 */
import { open, rename, rm } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { Command } from 'commander';
import type { Settings } from '../config/index.js';
import type { AccountScope, Database } from '../db/index.js';
import { toDecimalText } from '../money.js';
import { spreadsheetSafe } from '../printable.js';
import type { ReconciliationReport, Report, ReportGroup } from '../reports/index.js';
// The periods alone, eagerly: help and argument checks need them, and the reports index loads the database.
import {
  checkPeriod,
  checkTimeZone,
  describeInstant,
  GROUPINGS,
  type Grouping,
  type Period,
  parseReportInstant,
  ReportArgumentError,
} from '../reports/periods.js';
import { withAccountClients } from './api.js';
import {
  ACCOUNT_OPTION,
  accountScope,
  cell,
  parseChoice,
  printErrorLine,
  printJson,
  printLines,
  renderTable,
} from './terminal.js';

/** Exit code of `reconcile-report` when it found differences (1 stays "the command failed"). */
export const DIFFERENCES_EXIT_CODE = 3;

interface RangeFlags {
  from?: string;
  to?: string;
  tz?: string;
  account?: string;
}

export function registerReportCommands(program: Command): void {
  program
    .command('report')
    .description('orders, fiat spent, crypto bought and average cost per day, week, month or strategy')
    .requiredOption(
      '--from <date>',
      'start, inclusive: a date (local midnight in --tz) or an ISO 8601 instant',
    )
    .requiredOption('--to <date>', 'end, exclusive')
    .option('--by <grouping>', `one of ${GROUPINGS.join(', ')}`, 'day')
    .option('--tz <zone>', 'IANA time zone of the periods (default: reports.timezone)')
    .option('--format <format>', 'table, csv or json', 'table')
    .option(...ACCOUNT_OPTION)
    .action((flags: RangeFlags & { by: string; format: string }) => runReport(flags));

  program
    .command('export')
    .description('accounting exports')
    .command('orders')
    .description('one row per order placed in the period (ours and external), for the ledger')
    .requiredOption('--from <date>', 'start, inclusive')
    .requiredOption('--to <date>', 'end, exclusive')
    .option('--tz <zone>', 'IANA time zone in which dates are read (default: reports.timezone)')
    .option('--format <format>', 'csv or json', 'csv')
    .option('--output <file>', 'write to this file (replaced only once complete) instead of stdout')
    .option('--excel', 'start the CSV with a UTF-8 byte-order mark, which Excel needs to read UTF-8')
    .option('--strategy <name>', "only this strategy's orders (external orders have none)")
    .option(
      '--status <status>',
      'only orders in this settlement state: pending, partial, paid, withdrawn, settled',
    )
    .option(...ACCOUNT_OPTION)
    .action((flags: ExportFlags) => runExport(flags));

  program
    .command('reconcile-report')
    .description(
      "check our orders, settlement and balances against each account's service for a period; exit 3 on differences",
    )
    .requiredOption('--from <date>', 'start, inclusive')
    .requiredOption('--to <date>', 'end, exclusive')
    .option('--tz <zone>', 'IANA time zone in which dates are read (default: reports.timezone)')
    .option('--json', 'print one JSON document on stdout')
    .option(...ACCOUNT_OPTION)
    .action((flags: RangeFlags & { json?: boolean }) => runReconcileReport(flags));
}

interface Range {
  settings: Settings;
  period: Period;
  timeZone: string;
  scope: AccountScope;
}

async function parseRange(flags: RangeFlags): Promise<Range> {
  // The settings loader alone, not the config index with its purchase-service client (undici, msgpackr):
  // V8 lets the export's old generation grow to about four times what is live, module heap included, so
  // that client cost `export orders` ~23 MB of peak RSS with a million orders (bench/README.md, Export).
  const { loadSettings } = await import('../config/load.js');
  const settings = loadSettings({ env: process.env });
  const timeZone = checkTimeZone(
    flags.tz === undefined ? 'reports.timezone' : '--tz',
    flags.tz ?? settings.reports.timezone,
  );
  const from = parseReportInstant('--from', flags.from ?? '', timeZone);
  const to = parseReportInstant('--to', flags.to ?? '', timeZone);
  const period = checkPeriod(from, to);
  return { settings, period, timeZone, scope: await accountScope(flags.account, settings) };
}

async function withReportDatabase<T>(
  settings: Settings,
  work: (database: Database) => Promise<T>,
): Promise<T> {
  const { openDatabase } = await import('../db/index.js');
  const database = await openDatabase({
    url: settings.database.url,
    dataDir: settings.database.dataDir,
    maxConnections: 2,
  });
  try {
    return await work(database);
  } finally {
    await database.close();
  }
}

async function runReport(flags: RangeFlags & { by: string; format: string }): Promise<void> {
  try {
    const { buildReport } = await import('../reports/index.js');
    const range = await parseRange(flags);
    const by = parseChoice<Grouping>('--by', flags.by, GROUPINGS);
    const format = parseChoice('--format', flags.format, ['table', 'csv', 'json'] as const);
    const report = await withReportDatabase(range.settings, (database) =>
      buildReport(database, range.scope, range.period, by, range.timeZone),
    );
    if (format === 'json') printJson(report, []);
    else if (format === 'csv') process.stdout.write(await reportCsv(report));
    else printLines(renderReport(report), []);
  } catch (error) {
    printErrorLine(error, []);
    process.exitCode = 1;
  }
}

type ExportFlags = RangeFlags & {
  format: string;
  output?: string;
  excel?: boolean;
  strategy?: string;
  status?: string;
};

async function runExport(flags: ExportFlags): Promise<void> {
  try {
    const { EXPORT_FORMATS, exportOrders } = await import('../reports/index.js');
    const { SETTLEMENT_STATUSES } = await import('../db/index.js');
    const range = await parseRange(flags);
    const format = parseChoice('--format', flags.format, EXPORT_FORMATS);
    if (flags.excel && format !== 'csv')
      throw new ReportArgumentError('--excel applies to --format csv only');
    const filter = {
      strategy: flags.strategy,
      status:
        flags.status === undefined ? undefined : parseChoice('--status', flags.status, SETTLEMENT_STATUSES),
    };
    const count = await withReportDatabase(range.settings, async (database) => {
      // A misspelt name would export an empty ledger that looks like a quiet period.
      if (filter.strategy !== undefined && (await database.strategies.get(filter.strategy)) === null)
        throw new ReportArgumentError(
          `--strategy: no strategy named ${JSON.stringify(filter.strategy)} is recorded`,
        );
      const options = { format, excel: flags.excel, filter, scope: range.scope };
      return flags.output === undefined
        ? exportOrders(database, range.period, process.stdout, options)
        : exportToFile(flags.output, (out) => exportOrders(database, range.period, out, options));
    });
    const narrowed = [
      ...(flags.account === undefined ? [] : [`of account ${flags.account}`]),
      ...(filter.strategy === undefined ? [] : [`of ${JSON.stringify(filter.strategy)}`]),
      ...(filter.status === undefined ? [] : [`now ${filter.status}`]),
    ];
    const which = narrowed.length === 0 ? '' : ` ${narrowed.join(', ')},`;
    const where = flags.output === undefined ? '' : ` to ${flags.output}`;
    process.stderr.write(
      `exported ${count} orders${which} placed from ${describeInstant(range.period.start, range.timeZone)} to ${describeInstant(range.period.end, range.timeZone)} (exclusive)${where}\n`,
    );
  } catch (error) {
    printErrorLine(error, []);
    process.exitCode = 1;
  }
}

/** Writes beside the file and renames it into place, so a failed export never leaves half a ledger. */
async function exportToFile(path: string, write: (out: Writable) => Promise<number>): Promise<number> {
  const partial = `${path}.partial`;
  // Opened first, so that a folder that does not exist is one clear error before anything is read.
  const out = (await open(partial, 'w')).createWriteStream();
  // A later write error (a full disk) surfaces through finished() or the drain wait, not as a crash.
  out.on('error', () => {});
  try {
    const count = await write(out);
    out.end();
    await finished(out);
    await rename(partial, path);
    return count;
  } catch (error) {
    out.destroy();
    await rm(partial, { force: true });
    throw error;
  }
}

async function runReconcileReport(flags: RangeFlags & { json?: boolean }): Promise<void> {
  let secrets: string[] = [];
  try {
    const { reconcileAccounts } = await import('../reports/index.js');
    const { isDemo } = await import('../config/index.js');
    const { inScope } = await import('../db/index.js');
    const range = await parseRange(flags);
    if (isDemo(range.settings)) {
      // A sandbox started for this command holds no order: every one of ours would look missing.
      throw new ReportArgumentError(
        'reconcile-report compares our records with the purchase service: set TREASURY_API_URL',
      );
    }
    const names = range.settings.accounts
      .map((account) => account.name)
      .filter((name) => inScope(range.scope, name));
    const result = await withAccountClients(range.settings, names, (clients, known) => {
      secrets = known;
      return withReportDatabase(range.settings, (database) =>
        reconcileAccounts(database, clients, range.period),
      );
    });
    if (flags.json) printJson(result, secrets);
    else printLines(renderReconciliation(result, range.timeZone), secrets);
    process.exitCode = result.agrees ? 0 : DIFFERENCES_EXIT_CODE;
  } catch (error) {
    printErrorLine(error, secrets);
    process.exitCode = 1;
  }
}

const GROUP_COLUMNS = [
  'account',
  'group',
  'orders',
  'spent',
  'bought',
  'averageCost',
  'lowestPrice',
  'highestPrice',
  'settledSpent',
  'unsettledSpent',
  'skipped',
] as const;

function groupCells(group: ReportGroup): string[] {
  const skipped = Object.entries(group.skipped)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([reason, count]) => `${reason}=${count}`)
    .join(' ');
  return [
    cell(group.account),
    group.group,
    String(group.orders),
    cell(group.spent),
    cell(group.bought),
    cell(group.averageCost),
    cell(group.lowestPrice),
    cell(group.highestPrice),
    cell(group.settledSpent),
    cell(group.unsettledSpent),
    skipped || '-',
  ];
}

function renderReport(report: Report): string[] {
  const lines = [
    `report from ${describeInstant(report.from, report.timeZone)} (inclusive) to ${describeInstant(report.to, report.timeZone)} (exclusive), by ${report.by}`,
    `each period is [start, end) in ${report.timeZone}; orders by the time the service placed them, skipped cycles by slot`,
    report.rounding,
    '',
  ];
  const rows = report.groups.map(groupCells);
  lines.push(...renderTable(GROUP_COLUMNS, [...rows, groupCells(report.total)]));
  if (report.by !== 'strategy') {
    lines.push('', 'periods:');
    // Every account has the same periods: each is said once.
    for (const group of new Map(report.groups.map((one) => [one.group, one])).values()) {
      lines.push(
        `  ${group.group}: ${describeInstant(group.from, report.timeZone)} to ${describeInstant(group.to, report.timeZone)}`,
      );
    }
  }
  const withoutQuantity = report.total.ordersWithoutQuantity;
  if (withoutQuantity > 0) {
    lines.push(
      '',
      `${withoutQuantity} external orders have no known quantity yet (nothing withdrawn): left out of bought and the average cost`,
    );
  }
  lines.push(
    '',
    'savings against plain DCA (buying at every quote the strategy saw, at their average price):',
  );
  if (report.savings.length === 0)
    lines.push('  no strategy with price thresholds saw a quote in the period');
  else {
    lines.push(
      ...renderTable(
        [
          'account',
          'strategy',
          'quotesSeen',
          'averageQuotedPrice',
          'averageCost',
          'bought',
          'plainDcaCost',
          'savings',
          'savingsPct',
        ],
        report.savings.map((line) => [
          line.account,
          line.strategy,
          String(line.quotesSeen),
          cell(line.averageQuotedPrice),
          cell(line.averageCost),
          cell(line.bought),
          cell(line.plainDcaCost),
          cell(line.savings),
          line.savingsPct === null ? '-' : `${toDecimalText(line.savingsPct)}%`,
        ]),
      ).map((line) => `  ${line}`),
    );
  }
  return lines;
}

async function reportCsv(report: Report): Promise<string> {
  const { stringify } = await import('csv-stringify/sync');
  const rows = [...report.groups, report.total].map((group) => ({
    ...Object.fromEntries(GROUP_COLUMNS.map((column, index) => [column, groupCells(group)[index]])),
    // The group is a strategy's name, text a database may hold from before names were checked.
    group: spreadsheetSafe(group.group),
    from: group.from.toISOString(),
    to: group.to.toISOString(),
  }));
  return stringify(rows, {
    header: true,
    columns: ['account', 'group', 'from', 'to', ...GROUP_COLUMNS.slice(2)],
    record_delimiter: 'windows',
  });
}

function renderReconciliation(result: ReconciliationReport, timeZone: string): string[] {
  const lines = [
    `reconciliation from ${describeInstant(result.from, timeZone)} (inclusive) to ${describeInstant(result.to, timeZone)} (exclusive), each account against its own service`,
  ];
  for (const one of result.accounts) {
    lines.push(
      '',
      `account ${one.account}:`,
      `  orders: ${one.orders.ours} in our records, ${one.orders.service} at the service, ${one.orders.matched} matched`,
      `  settlement: ${one.settlement.settled} settled, ${one.settlement.open} still settling`,
    );
    const { balance } = one;
    if (balance.change && balance.expectedChange && balance.start && balance.end) {
      lines.push(
        `  balance: snapshots of ${balance.start.takenAt} and ${balance.end.takenAt}: fiat ${balance.change.fiatBalance} (ours ${balance.expectedChange.fiatBalance}), crypto ${balance.change.cryptoBalance} (ours ${balance.expectedChange.cryptoBalance}), credit used ${balance.change.creditUsed} (ours ${balance.expectedChange.creditUsed})`,
      );
    }
    if (one.agrees) {
      lines.push('  AGREES: our records, the service and the balances tell the same story');
      continue;
    }
    lines.push(`  DIFFERENCES (${one.differences.length}):`);
    for (const difference of one.differences) {
      lines.push(
        `    [${difference.account}] [${difference.check}] ${difference.kind}: ${difference.detail}`,
      );
    }
  }
  const differing = result.accounts.filter((one) => !one.agrees).map((one) => one.account);
  lines.push(
    '',
    differing.length === 0
      ? 'AGREES: every account'
      : `DIFFERENCES in ${differing.length} of ${result.accounts.length} account(s): ${differing.join(', ')}`,
  );
  return lines;
}
