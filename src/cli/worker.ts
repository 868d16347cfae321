/**
 * Worker commands: `run` (the long-running worker), `once` (one cycle of each strategy now), the kill
 * switch (`pause`, `resume`) and `reconcile`. Results go to stdout (one JSON document with --json); log
 * lines of `once` and the admin commands go to stderr so they never mix with results.
 */
import type { Command } from 'commander';
import type { App } from '../app.js';
import type { Strategy } from '../strategy/index.js';
import { withCommandDatabase } from './command-database.js';
import { commandLineActor } from './people.js';
import { cell, printErrorLine, printJson, printLines, renderRecord, renderTable } from './terminal.js';

export function registerWorkerCommands(program: Command): void {
  program
    .command('run')
    .description(
      'the long-running worker: schedules, reconciliation, tracking, /metrics; SIGINT/SIGTERM drain and stop',
    )
    .action(runWorker);

  program
    .command('once')
    .description('one cycle of every enabled (or each named) strategy now; exit 1 when any failed')
    .option('--strategy <name>', 'run this strategy (repeat for several)', collect, [] as string[])
    .option('--slot <iso>', 'the slot to run, ISO 8601 (default: the current instant)')
    .option('--json', 'print one JSON document { cycles: [...] } on stdout')
    .action(runOnceCommand);

  program
    .command('pause')
    .description('kill switch: every replica stops placing orders within a second')
    .option('--reason <text>', 'why, for the record')
    .option('--by <person>', 'who pauses, for the audit log (default TREASURY_ACTOR, else cli:<login>)')
    .option('--json', 'print one JSON document on stdout')
    .action((flags: { reason?: string; by?: string; json?: boolean }) => switchControl('pause', flags));

  program
    .command('resume')
    .description('release the kill switch')
    .option('--by <person>', 'who resumes, for the audit log (default TREASURY_ACTOR, else cli:<login>)')
    .option('--json', 'print one JSON document on stdout')
    .action((flags: { by?: string; json?: boolean }) => switchControl('resume', flags));

  program
    .command('reconcile')
    .description('recover abandoned cycles and match unsure order attempts against the service now')
    .option('--by <person>', 'who runs it, for the audit log (default TREASURY_ACTOR, else cli:<login>)')
    .option('--json', 'print one JSON document on stdout')
    .action(runReconcile);
}

class ReconcileArgumentError extends Error {
  override readonly name = 'ReconcileArgumentError';
  readonly code = 'API_URL_MISSING';
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

async function runWorker(): Promise<void> {
  let app: App | undefined;
  try {
    const { App } = await import('../app.js');
    const { handleSignals } = await import('../engine/index.js');
    app = new App({ mode: 'run' });
    const running = app;
    await tolerateLostConnectionRejections(running);
    let dispose = () => {};
    const stopped = new Promise<void>((resolve) => {
      dispose = handleSignals(
        {
          stop: async () => {
            await running.stop();
            running.logger.info('worker stopped');
            resolve();
          },
          reload: () => running.reload(),
        },
        running.logger,
      );
    });
    await running.start();
    await stopped;
    dispose();
    running.logger.flush();
  } catch (error) {
    printErrorLine(error, []);
    await app?.stop();
    process.exitCode = 1;
  }
  // Everything is closed; a handle some library left open must not keep a stopped worker alive.
  setTimeout(() => process.exit(), 5_000).unref();
}

/**
 * postgres.js can leave a promise of its own (the array-type lookup of a new connection) rejected with
 * nobody listening when the backend is terminated at that moment; Node would end the worker for it. Such a
 * rejection is only a lost connection, which every caller already handles, so it is logged and counted.
 * Anything else still ends the process, as it should.
 */
async function tolerateLostConnectionRejections(app: App): Promise<void> {
  const { isConnectionLoss } = await import('../db/index.js');
  process.on('unhandledRejection', (reason) => {
    if (!isConnectionLoss(reason)) throw reason;
    app.metrics.databaseErrors.inc({ operation: 'driver' });
    app.logger.warn({ err: reason }, 'database connection lost outside any statement; the pool reconnects');
  });
}

async function switchControl(
  action: 'pause' | 'resume',
  flags: { reason?: string; by?: string; json?: boolean },
) {
  try {
    const { openConsoleStore } = await import('../db/index.js');
    await withCommandDatabase(
      async (database) => {
        // The same person as every other command-line decision in the audit log (README, Audit log).
        const by = flags.by?.trim() || commandLineActor();
        // Through the console's audited actions: the switch and its audit row in one transaction.
        const { actions } = openConsoleStore(database);
        const state =
          action === 'pause' ? await actions.pauseAll(by, flags.reason ?? null) : await actions.resumeAll(by);
        if (flags.json) printJson(state, []);
        else
          printLines(
            [state.paused ? `paused by ${by}${state.reason ? `: ${state.reason}` : ''}` : `resumed by ${by}`],
            [],
          );
      },
      { maxConnections: 1 },
    );
  } catch (error) {
    printErrorLine(error, []);
    process.exitCode = 1;
  }
}

async function runReconcile(flags: { json?: boolean; by?: string }): Promise<void> {
  let app: App | undefined;
  try {
    const { App } = await import('../app.js');
    const { isDemo } = await import('../config/index.js');
    const { openConsoleStore } = await import('../db/index.js');
    const { Maintenance } = await import('../engine/index.js');
    const { default: pino } = await import('pino');
    app = new App({ mode: 'admin', logDestination: pino.destination({ fd: 2, sync: true }) });
    if (isDemo(app.settings)) {
      // A sandbox started now holds no orders: matching against it would declare every unsure cycle absent.
      throw new ReconcileArgumentError(
        'reconcile needs the purchase service (TREASURY_API_URL): a built-in sandbox starts empty and proves nothing',
      );
    }
    await app.start();
    const report = await new Maintenance(app.context).runOnce();
    // A person ran it: the audit log says who, and what the pass did.
    await openConsoleStore(app.context.database).audit.append({
      actor: flags.by?.trim() || commandLineActor(),
      action: 'reconcile.run',
      subject: 'reconcile',
      after: report,
    });
    if (flags.json) printJson(report, []);
    else printLines(renderRecord(report), []);
    if (report.errors.length > 0) process.exitCode = 1;
  } catch (error) {
    printErrorLine(error, []);
    process.exitCode = 1;
  } finally {
    await app?.stop();
  }
}

/**
 * `treasury-bot once`: one cycle of every enabled strategy (or of each one named) at one slot, the current
 * instant unless --slot names one. A slot already claimed is reported as skipped (slot_already_claimed),
 * never bought twice. Exit 0 when every cycle ended placed, skipped or dry-run; 1 otherwise.
 */
interface OnceFlags {
  strategy: string[];
  slot?: string;
  json?: boolean;
}

export class OnceArgumentError extends Error {
  override readonly name = 'OnceArgumentError';
  readonly code = 'INVALID_ARGUMENT';
}

export async function runOnceCommand(flags: OnceFlags): Promise<void> {
  let app: App | undefined;
  try {
    const slot = parseSlot(flags.slot);
    const { App } = await import('../app.js');
    const {
      createLimiter,
      inAccount,
      isOkOutcome,
      recordStrategiesSeen,
      resolveStrategyVersions,
      runCycle,
      runningVersionOf,
    } = await import('../engine/index.js');
    const { accountOf, loadStrategiesOrThrow } = await import('../strategy/index.js');
    const { default: pino } = await import('pino');
    app = new App({ mode: 'once', logDestination: pino.destination({ fd: 2, sync: true }) });
    const loaded = await loadStrategiesOrThrow(
      app.settings.strategies.path,
      app.settings.accounts.map((account) => account.name),
    );
    const requested = selectStrategies(loaded.strategies, flags.strategy);
    await app.start();
    const { context } = app;
    // As the worker does: what runs is the approved version, which may not be what the files hold.
    const versioned = await resolveStrategyVersions(context, loaded, app.versionPolicy);
    await recordStrategiesSeen(context, versioned.running);
    const selected =
      flags.strategy.length === 0
        ? versioned.running.filter((strategy) => strategy.enabled)
        : requested.map((strategy) => runningVersionOf(strategy.name, versioned));
    const at = slot ?? context.clock();
    const limiter = createLimiter(context.settings.concurrency);
    const reports = await Promise.all(
      // Each cycle works for its strategy's account, as the worker's do: its client, its rows, its locks.
      selected.map((strategy) =>
        limiter.run(() =>
          runCycle(inAccount(context, accountOf(strategy)), { strategy, slot: at, trigger: 'once' }),
        ),
      ),
    );
    if (flags.json) {
      printJson({ cycles: reports }, []);
    } else {
      const columns = [
        'strategy',
        'slot',
        'outcome',
        'reason',
        'quoteId',
        'orderId',
        'price',
        'amount',
        'totalCost',
      ] as const;
      printLines(
        renderTable(
          columns,
          reports.map((report) => columns.map((column) => cell(report[column]))),
        ),
        [],
      );
    }
    process.exitCode = reports.every((report) => isOkOutcome(report.outcome)) ? 0 : 1;
  } catch (error) {
    printErrorLine(error, []);
    process.exitCode = 1;
  } finally {
    await app?.stop();
  }
}

function parseSlot(text: string | undefined): Date | undefined {
  if (text === undefined) return undefined;
  const instant = new Date(text);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(text) || Number.isNaN(instant.getTime())) {
    throw new OnceArgumentError(
      `--slot must be an ISO 8601 instant like 2025-01-31T10:00:00Z (got "${text}")`,
    );
  }
  return instant;
}

/** Named strategies in the order given (disabled ones too: naming one is an explicit request). */
function selectStrategies(all: readonly Strategy[], names: readonly string[]): Strategy[] {
  if (names.length === 0) return all.filter((strategy) => strategy.enabled);
  const unknown = names.filter((name) => !all.some((strategy) => strategy.name === name));
  if (unknown.length > 0) {
    throw new OnceArgumentError(
      `unknown strategy ${unknown.map((name) => `"${name}"`).join(', ')}; known: ${all.map((s) => s.name).join(', ')}`,
    );
  }
  return [...new Set(names)].map((name) => all.find((strategy) => strategy.name === name)!);
}
