/**
 * Four-eyes control from the command line: `approvals`, `approve`, `reject` and `envelope add|approve|list|
 * revoke`, over the operations of src/control. PERSON is `--by`, else TREASURY_ACTOR; an action without
 * one is refused (an approval must name who gave it). Results go to stdout (one JSON document with --json);
 * an error is one line on stderr and exit 1.
 */
import type { Command } from 'commander';
import type { Settings } from '../config/index.js';
import type { ApprovalControl } from '../control/index.js';
import type { Envelope, ParkedCycle } from '../db/index.js';
import { formatDuration } from '../strategy/duration.js';
import { withCommandDatabase } from './command-database.js';
import {
  ACCOUNT_OPTION,
  accountScope,
  CliArgumentError,
  cell,
  declaredPerson,
  parseAmount,
  parseInstant,
  printErrorLine,
  printResult,
  renderRecord,
  renderTable,
} from './terminal.js';

interface ByFlag {
  by?: string;
  json?: boolean;
}

interface ListFlags {
  json?: boolean;
  account?: string;
}

export function registerApprovalCommands(program: Command): void {
  program
    .command('approvals')
    .description('cycles parked for approval, oldest first, with who approved so far')
    .option('--json', 'print one JSON document on stdout')
    .option(...ACCOUNT_OPTION)
    .action((flags: ListFlags) =>
      withControl(async (control, settings) => {
        const parked = await control.listParked(await accountScope(flags.account, settings));
        printResult(flags.json, parked.map(parkedView), () => parkedTable(parked), []);
      }),
    );

  program
    .command('approve')
    .description('approve a parked cycle; the last approval needed lets a worker buy it at a fresh quote')
    .argument('<cycle-id>', 'the parked cycle (see `approvals`)')
    .option('--by <person>', 'who approves (default TREASURY_ACTOR)')
    .option(
      '--max-price <price>',
      'the highest price the fresh quote may have (default: the parked price plus the tolerance)',
    )
    .option('--json', 'print one JSON document on stdout')
    .action((cycleText: string, flags: ByFlag & { maxPrice?: string }) =>
      withControl(async (control) => {
        const cycleId = parseId('CYCLE_ID', cycleText);
        const person = await declaredPerson(flags.by);
        const maxPrice =
          flags.maxPrice === undefined ? undefined : parseAmount(flags.maxPrice, '--max-price');
        const result = await control.approve(cycleId, person, maxPrice === undefined ? {} : { maxPrice });
        const view = {
          cycleId,
          state: result.cycle.state,
          approvedBy: result.approvedBy,
          approversRequired: result.approversRequired,
          approvedMaxPrice: result.approvedMaxPrice,
        };
        printResult(
          flags.json,
          view,
          () => [
            result.approvedMaxPrice === null
              ? `cycle ${cycleId}: approved by ${person} (${result.approvedBy.length} of ${result.approversRequired})`
              : `cycle ${cycleId}: approved; a worker buys it at a fresh quote of at most ${cell(result.approvedMaxPrice)}`,
          ],
          [],
        );
      }),
    );

  program
    .command('reject')
    .description('reject a parked cycle: it ends without an order')
    .argument('<cycle-id>', 'the parked cycle (see `approvals`)')
    .option('--by <person>', 'who rejects (default TREASURY_ACTOR)')
    .option('--reason <text>', 'why, for the record (required)')
    .option('--json', 'print one JSON document on stdout')
    .action((cycleText: string, flags: ByFlag & { reason?: string }) =>
      withControl(async (control) => {
        const cycleId = parseId('CYCLE_ID', cycleText);
        const person = await declaredPerson(flags.by);
        const reason = required('--reason', flags.reason);
        const cycle = await control.reject(cycleId, person, reason);
        printResult(
          flags.json,
          { cycleId, state: cycle.state, reason },
          () => [`cycle ${cycleId}: rejected by ${person}`],
          [],
        );
      }),
    );

  const envelope = program
    .command('envelope')
    .description('envelopes: what the automation may buy without asking, approved in advance');
  envelope
    .command('add')
    .description('a new envelope, active once the strategy’s approvers (not its creator) approve it')
    .option('--strategy <name>', 'the strategy whose cycles it covers (required)')
    .option('--max-order <amount>', 'the largest order cost (fiat) it covers (required)')
    .option('--max-total <amount>', 'the most all orders charged to it may cost together (required)')
    .option('--max-price <price>', 'the highest quote price it covers')
    .option('--from <iso>', 'start, ISO 8601 (required)')
    .option('--until <iso>', 'end (exclusive), ISO 8601 (required)')
    .option('--by <person>', 'who creates it (default TREASURY_ACTOR)')
    .option('--json', 'print one JSON document on stdout')
    .action(
      (
        flags: ByFlag & {
          strategy?: string;
          maxOrder?: string;
          maxTotal?: string;
          maxPrice?: string;
          from?: string;
          until?: string;
        },
      ) =>
        withControl(async (control) => {
          const input = {
            strategy: required('--strategy', flags.strategy),
            maxOrder: parseAmount(required('--max-order', flags.maxOrder), '--max-order'),
            maxTotal: parseAmount(required('--max-total', flags.maxTotal), '--max-total'),
            maxPrice: flags.maxPrice === undefined ? null : parseAmount(flags.maxPrice, '--max-price'),
            validFrom: parseInstant('--from', required('--from', flags.from))!,
            validUntil: parseInstant('--until', required('--until', flags.until))!,
          };
          const created = await control.addEnvelope(input, await declaredPerson(flags.by));
          printEnvelope(
            created,
            flags.json,
            `envelope ${created.id} added; it needs ${created.approversRequired} approver(s) other than ${created.createdBy}`,
          );
        }),
    );
  envelope
    .command('approve')
    .description('approve an envelope (its creator cannot)')
    .argument('<id>', 'the envelope (see `envelope list`)')
    .option('--by <person>', 'who approves (default TREASURY_ACTOR)')
    .option('--json', 'print one JSON document on stdout')
    .action((idText: string, flags: ByFlag) =>
      withControl(async (control) => {
        const id = parseId('ID', idText);
        const person = await declaredPerson(flags.by);
        const approved = await control.approveEnvelope(id, person);
        const state =
          approved.activeAt === null
            ? `${approved.approvedBy.length} of ${approved.approversRequired} approvals`
            : 'active';
        printEnvelope(approved, flags.json, `envelope ${approved.id}: approved by ${person} (${state})`);
      }),
    );
  envelope
    .command('revoke')
    .description('revoke an envelope: no order is charged to it any more')
    .argument('<id>', 'the envelope (see `envelope list`)')
    .option('--by <person>', 'who revokes (default TREASURY_ACTOR)')
    .option('--json', 'print one JSON document on stdout')
    .action((idText: string, flags: ByFlag) =>
      withControl(async (control) => {
        const id = parseId('ID', idText);
        const person = await declaredPerson(flags.by);
        const revoked = await control.revokeEnvelope(id, person);
        printEnvelope(revoked, flags.json, `envelope ${revoked.id}: revoked by ${person}`);
      }),
    );
  envelope
    .command('list')
    .description('every envelope, newest first, with its spend and room left')
    .option('--json', 'print one JSON document on stdout')
    .option(...ACCOUNT_OPTION)
    .action((flags: ListFlags) =>
      withControl(async (control, settings) => {
        const envelopes = await control.listEnvelopes(await accountScope(flags.account, settings));
        printResult(
          flags.json,
          envelopes,
          () =>
            renderTable(
              [
                'id',
                'account',
                'strategy',
                'state',
                'max order',
                'max total',
                'max price',
                'spent',
                'room',
                'from',
                'until',
                'by',
                'approved by',
              ],
              envelopes.map((e) => [
                String(e.id),
                e.account,
                e.strategy,
                stateOf(e),
                cell(e.maxOrder),
                cell(e.maxTotal),
                cell(e.maxPrice),
                cell(e.spent),
                cell(e.room),
                cell(e.validFrom),
                cell(e.validUntil),
                e.createdBy,
                e.approvedBy.join(', ') || '-',
              ]),
            ),
          [],
        );
      }),
    );
}

/**
 * A required option, checked here rather than by commander so that its absence is one line on stderr like
 * every other bad argument (commander would add the command's help).
 */
function required(option: string, value: string | undefined): string {
  if (value === undefined || value.trim() === '') throw new CliArgumentError(`${option} is required`);
  return value;
}

function parseId(name: string, text: string): number {
  if (!/^[1-9]\d{0,15}$/.test(text)) {
    throw new CliArgumentError(`${name} must be a positive whole number (got ${JSON.stringify(text)})`);
  }
  return Number(text);
}

function stateOf(envelope: Envelope): string {
  if (envelope.revokedAt !== null) return 'revoked';
  if (envelope.activeAt === null) return 'pending';
  return 'active';
}

function printEnvelope(envelope: Envelope, json: boolean | undefined, line: string): void {
  printResult(json, envelope, () => [line, ...renderRecord({ state: stateOf(envelope), ...envelope })], []);
}

function parkedView(parked: ParkedCycle) {
  const { cycle } = parked;
  return {
    cycleId: cycle.id,
    account: cycle.account,
    strategy: cycle.strategy,
    slot: cycle.slot,
    state: cycle.state,
    quoteId: cycle.quoteId,
    amount: cycle.amount,
    price: parked.parkedPrice,
    totalCost: cycle.totalCost,
    parkedAt: parked.parkedAt,
    expiresAt: parked.expiresAt,
    defaultMaxPrice: parked.defaultMaxPrice,
    approversRequired: parked.approversRequired,
    approvedBy: parked.approvedBy,
  };
}

function parkedTable(parked: readonly ParkedCycle[]): string[] {
  if (parked.length === 0) return ['no cycle waits for approval'];
  const now = Date.now();
  return renderTable(
    ['cycle', 'account', 'strategy', 'total cost', 'price', 'max price', 'approvals', 'waiting', 'expires'],
    parked.map((p) => [
      String(p.cycle.id),
      p.cycle.account,
      p.cycle.strategy,
      cell(p.cycle.totalCost),
      cell(p.parkedPrice),
      cell(p.defaultMaxPrice),
      `${p.approvedBy.length}/${p.approversRequired}${p.approvedBy.length ? ` (${p.approvedBy.join(', ')})` : ''}`,
      formatDuration(now - p.parkedAt.getTime()),
      cell(p.expiresAt),
    ]),
  );
}

async function withControl(
  work: (control: ApprovalControl, settings: Settings) => Promise<void>,
): Promise<void> {
  try {
    const { createApprovalControl } = await import('../control/index.js');
    await withCommandDatabase((database, settings) => work(createApprovalControl(database), settings));
  } catch (error) {
    printErrorLine(error, []);
    process.exitCode = 1;
  }
}
