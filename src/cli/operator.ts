/**
 * Operator commands on the database. `migrate` brings the schema up to date. For a strategy halted by an
 * ambiguous reconciliation, `resolve` settles one unsure cycle by hand (adopt the order that is its own, or
 * declare that none was placed) and `unhalt` lifts the halt once no unsure cycle of the strategy is left.
 * Results go to stdout (one JSON document with --json); an error is one line on stderr and exit 1.
 */
import type { Command } from 'commander';
import type { ResolveResult } from '../engine/index.js';
import { withCommandDatabase } from './command-database.js';
import { commandLineActor } from './people.js';
import { printErrorLine, printJson, printLines, renderRecord } from './terminal.js';

interface ResolveFlags {
  by?: string;
  order?: string;
  notPlaced?: boolean;
  json?: boolean;
}

export class OperatorArgumentError extends Error {
  override readonly name = 'OperatorArgumentError';
  constructor(
    readonly code: 'INVALID_ARGUMENT' | 'API_URL_MISSING',
    message: string,
  ) {
    super(message);
  }
}

export function registerOperatorCommands(program: Command): void {
  program
    .command('resolve')
    .description(
      'settle an unsure cycle by hand: adopt the service order that is its own, or declare none placed',
    )
    .argument('<cycle-id>', 'the unsure cycle (see `status`)')
    .option('--order <service-order-id>', "the service's order id of the order this cycle placed")
    .option('--not-placed', 'the cycle placed no order')
    .option('--by <person>', 'who decides, for the audit log (default TREASURY_ACTOR, else cli:<login>)')
    .option('--json', 'print one JSON document on stdout')
    .action((cycleId: string, flags: ResolveFlags) => runResolve(cycleId, flags));

  program
    .command('unhalt')
    .description('lift the halt of a strategy once none of its cycles is unsure')
    .argument('<strategy>', 'the strategy name')
    .option('--by <person>', 'who decides, for the audit log (default TREASURY_ACTOR, else cli:<login>)')
    .option('--json', 'print one JSON document on stdout')
    .action((name: string, flags: { json?: boolean; by?: string }) => runUnhalt(name, flags));
}

async function runResolve(cycleText: string, flags: ResolveFlags): Promise<void> {
  try {
    const cycleId = parseCycleId(cycleText);
    if ((flags.order === undefined) === (flags.notPlaced !== true)) {
      throw new OperatorArgumentError('INVALID_ARGUMENT', 'give exactly one of --order ID or --not-placed');
    }
    const { resolveUnsureCycle } = await import('../engine/index.js');
    const result =
      flags.order === undefined
        ? await withCommandDatabase((database) =>
            resolveUnsureCycle({ database }, cycleId, { kind: 'not_placed' }, actorOf(flags)),
          )
        : await resolveWithService(cycleId, flags.order, actorOf(flags));
    if (flags.json) printJson(summaryOf(result), []);
    else printLines(describeResolution(result), []);
  } catch (error) {
    printErrorLine(error, []);
    process.exitCode = 1;
  }
}

/**
 * Adoption reads the order from the purchase service, so it needs the real one (a fresh sandbox holds none):
 * the service of the cycle's own account, the only one that can hold its order.
 */
async function resolveWithService(
  cycleId: number,
  serviceOrderId: string,
  actor: string,
): Promise<ResolveResult> {
  const { App } = await import('../app.js');
  const { isDemo } = await import('../config/index.js');
  const { resolveUnsureCycle } = await import('../engine/index.js');
  const { default: pino } = await import('pino');
  const app = new App({ mode: 'admin', logDestination: pino.destination({ fd: 2, sync: true }) });
  try {
    if (isDemo(app.settings)) {
      throw new OperatorArgumentError(
        'API_URL_MISSING',
        'resolve --order reads the order from the purchase service: set TREASURY_API_URL',
      );
    }
    await app.start();
    const { database, accounts } = app.context;
    return await resolveUnsureCycle(
      { database, accounts },
      cycleId,
      { kind: 'order', serviceOrderId },
      actor,
    );
  } finally {
    await app.stop();
  }
}

async function runUnhalt(name: string, flags: { json?: boolean; by?: string }): Promise<void> {
  try {
    const { clearStrategyHalt } = await import('../engine/index.js');
    const { strategy, wasHalted } = await withCommandDatabase((database) =>
      clearStrategyHalt(database, name, actorOf(flags)),
    );
    const report = { strategy: strategy.name, halted: strategy.haltedAt !== null, wasHalted };
    if (flags.json) printJson(report, []);
    else printLines([wasHalted ? `strategy ${name}: halt lifted` : `strategy ${name} was not halted`], []);
  } catch (error) {
    printErrorLine(error, []);
    process.exitCode = 1;
  }
}

/** Who an operator decision is recorded as: `--by`, else TREASURY_ACTOR, else the login name. */
function actorOf(flags: { by?: string }): string {
  return flags.by?.trim() || commandLineActor();
}

function parseCycleId(text: string): number {
  if (!/^[1-9]\d{0,15}$/.test(text)) {
    throw new OperatorArgumentError(
      'INVALID_ARGUMENT',
      `cycle id must be a positive integer (got "${text}")`,
    );
  }
  return Number(text);
}

/** The JSON document of `resolve --json`. */
function summaryOf({ cycle }: ResolveResult) {
  return {
    cycleId: cycle.id,
    strategy: cycle.strategy,
    slot: cycle.slot,
    state: cycle.state,
    reason: cycle.reasonCode,
    orderId: cycle.serviceOrderId,
  };
}

function describeResolution(result: ResolveResult): string[] {
  const { cycle, order } = result;
  const what = order
    ? `cycle ${cycle.id} placed: order ${order.serviceOrderId} adopted`
    : `cycle ${cycle.id} not placed`;
  const { strategy, slot, reason } = summaryOf(result);
  return [what, ...renderRecord({ strategy, slot, reason })];
}

/**
 * `migrate`: PostgreSQL when DATABASE_URL is set, otherwise the embedded database. On a server it is the one
 * command that changes the schema, run by the owner role; `--grant-to ROLE` then gives the worker role its
 * rights in the same transaction (README, Database roles).
 */
export function registerDbCommands(program: Command): void {
  program
    .command('migrate')
    .description(
      'apply database migrations, as the owner role (on PostgreSQL no other command does; the embedded database migrates on start)',
    )
    .option('--grant-to <role>', "then give this PostgreSQL role the worker's rights, and only those")
    .option('--json', 'print one JSON document on stdout')
    .action((flags: { json?: boolean; grantTo?: string }) => runMigrate(flags));
}

async function runMigrate(flags: { json?: boolean; grantTo?: string }): Promise<void> {
  // The connection string may carry a password: it is treated as a secret in every line printed.
  let secrets: string[] = [];
  try {
    const { openDatabaseFromSettings } = await import('../app.js');
    const { loadSettings } = await import('../config/index.js');
    const { describeTarget, roleNameProblem } = await import('../db/index.js');
    const settings = loadSettings({ env: process.env });
    const { url, dataDir } = settings.database;
    secrets = url ? [url, ...passwordOf(url)] : [];
    const { grantTo } = flags;
    const problem = grantTo === undefined ? undefined : roleNameProblem(grantTo);
    if (problem) throw new OperatorArgumentError('INVALID_ARGUMENT', problem);
    if (grantTo !== undefined && !url) {
      throw new OperatorArgumentError(
        'INVALID_ARGUMENT',
        '--grant-to needs a PostgreSQL database (DATABASE_URL): the embedded one has no roles',
      );
    }
    const { database, migration } = await openDatabaseFromSettings(settings, {
      maxConnections: 1,
      schema: { step: 'apply', grantTo },
    });
    await database.close();
    const target = url ? `${describeTarget(url)} (PostgreSQL)` : `${dataDir} (embedded PGlite)`;
    if (flags.json) {
      printJson(
        { backend: database.kind, applied: migration.applied, ...(grantTo ? { grantedTo: grantTo } : {}) },
        secrets,
      );
    } else {
      printLines(
        [
          migration.applied.length === 0
            ? `database ${target} is up to date`
            : `database ${target}: applied ${migration.applied.join(', ')}`,
          ...(grantTo ? [`role ${grantTo} has the worker's rights`] : []),
        ],
        secrets,
      );
    }
  } catch (error) {
    printErrorLine(error, secrets);
    process.exitCode = 1;
  }
}

function passwordOf(url: string): string[] {
  try {
    const password = new URL(url).password;
    return password ? [password, decodeURIComponent(password)] : [];
  } catch {
    return [];
  }
}
