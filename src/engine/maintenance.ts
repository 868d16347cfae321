/**
 * The periodic housekeeping of a running worker, also run once at start and by `treasury-bot reconcile`:
 * crash recovery, reconciliation of unsure cycles, the external-order scan, the approval queue (parked
 * cycles past their deadline expire; approved ones are claimed back and run on a fresh quote), the watch of
 * the worker's targets (target-watch.ts), and the gauges that follow from them. Unsure cycles are split
 * between replicas by leases; the external scan runs on one replica at a time under a session advisory lock
 * held on a reserved connection.
 */

import { advisoryLockKey, EVERY_ACCOUNT } from '../db/index.js';
import { errorCodeOf } from '../errors.js';
import { gaugeValue } from '../observability/metrics.js';
import { createPeriodicTask, type PeriodicTask } from '../runtime/periodic-task.js';
import type { Strategy } from '../strategy/index.js';
import { type AccountContext, type EngineContext, inAccount } from './context.js';
import { endApprovedCycle, resumeApprovedCycle } from './cycle.js';
import { withDatabase } from './engine-errors.js';
import { type ExternalScanResult, recordExternalOrders } from './external-orders.js';
import { ExternalScanWindow } from './external-scan-window.js';
import type { CycleReport } from './outcomes.js';
import { type ReconcileResult, reconcileUnsureCycles } from './reconcile.js';
import { type RecoveryResult, recoverAbandonedCycles } from './recovery.js';
import { strategyOfParkedVersion } from './strategy-versions.js';
import { TargetWatch, type WatchedTarget, watchedTargets } from './target-watch.js';

/**
 * One replica at a time scans an account's order list; other accounts' scans run meanwhile. The `default`
 * account keeps the constant the single account always had.
 */
function externalScanLockKey(account: string): string {
  return account === 'default' ? '7304116215388002' : advisoryLockKey(`external-order-scan:${account}`);
}

export interface ApprovalsResult {
  expired: number;
  /** The approved cycles this replica claimed and ran, as their cycle reports. */
  resumed: CycleReport[];
}

export interface MaintenanceOptions {
  /**
   * The strategies this replica runs (the worker's current set): approved cycles of these are claimed and
   * run, and its targets watched. Without it (`treasury-bot reconcile`) approved cycles and targets are left
   * to a running worker.
   */
  strategies?: () => readonly Strategy[];
  /**
   * A worker whose strategy changes wait for approval: called on every tick of the approvals poll, before
   * the approved cycles are looked for, so that a version approved from another process runs from the next
   * slot (worker.ts). One poll for everything people approve, not one per kind.
   */
  applyApprovedVersions?: () => Promise<void>;
}

export interface MaintenanceReport {
  recovery?: RecoveryResult;
  approvals?: ApprovalsResult;
  /** Summed over the accounts. */
  reconcile?: ReconcileResult;
  /** By account: each account's service is scanned on its own. */
  external?: Map<string, ExternalScanResult | 'skipped'>;
  /** The targets watched, of every account whose step ran. */
  targets?: WatchedTarget[];
  errors: string[];
  /** The pass was cut short by stop(); the steps it did not finish run on the next start. */
  stopped?: true;
}

export class Maintenance {
  /** Each account's order list is covered by a window of its own. */
  private readonly scanWindows = new Map<string, ExternalScanWindow>();
  /**
   * stop() aborts the pass in flight: its requests would otherwise hold the worker's stop for the client's
   * timeouts times its retries (tens of seconds against a service that accepts connections and never answers).
   */
  private readonly task: PeriodicTask<MaintenanceReport>;
  /**
   * A person who just gave the last approval expects the purchase at once, not at the next pass: a short
   * poll (one index probe of `approved` cycles) claims them within engine.approvals.pollMs, and applies the
   * strategy versions approved since its last tick (options.applyApprovedVersions). A poll, not
   * LISTEN/NOTIFY: it works the same on PGlite and on PostgreSQL, and the claim stays the compare-and-set
   * that makes one replica buy it.
   */
  private readonly approvedPoll: PeriodicTask<void>;
  /** The instant runOnce(now) asked for, read as its pass starts (runNow starts a run synchronously). */
  private requestedNow: Date | undefined;
  private readonly targetWatch: TargetWatch;

  constructor(
    private readonly context: EngineContext,
    private readonly options: MaintenanceOptions = {},
  ) {
    this.targetWatch = new TargetWatch(context.metrics);
    this.task = createPeriodicTask({
      name: 'maintenance',
      intervalMs: context.settings.reconcile.intervalMs,
      logger: context.logger,
      run: (signal) => this.pass(this.requestedNow ?? context.clock(), signal),
    });
    this.approvedPoll = createPeriodicTask({
      name: 'approved cycles poll',
      intervalMs: context.settings.approvals.pollMs,
      logger: context.logger,
      runAtStart: false,
      run: async (signal) => {
        await options.applyApprovedVersions?.();
        const waiting = await withDatabase(context, 'approvals_waiting', () =>
          context.database.approvals.anyApproved(),
        );
        if (waiting) await this.claimApproved(signal);
      },
    });
  }

  start(): void {
    this.task.start();
    if (this.options.strategies) this.approvedPoll.start();
  }

  async stop(): Promise<void> {
    await Promise.all([this.approvedPoll.stop(), this.task.stop()]);
  }

  /** One pass; a pass already under way is joined rather than doubled. */
  runOnce(now?: Date): Promise<MaintenanceReport> {
    this.requestedNow = now;
    try {
      return this.task.runNow();
    } finally {
      this.requestedNow = undefined;
    }
  }

  private async pass(now: Date, signal: AbortSignal): Promise<MaintenanceReport> {
    const report: MaintenanceReport = { errors: [] };
    const step = async <T>(name: string, work: () => Promise<T>): Promise<T | undefined> => {
      if (signal.aborted) return undefined;
      try {
        return await work();
      } catch (error) {
        // Cut short by stop(), not failed: nothing to alert on, and the step runs again on the next start.
        if (signal.aborted) return undefined;
        report.errors.push(`${name}: ${errorCodeOf(error)}`);
        this.context.logger.warn(
          { step: name, errorCode: errorCodeOf(error), err: error },
          'maintenance step failed',
        );
        return undefined;
      }
    };
    report.recovery = await step('recovery', () => recoverAbandonedCycles(this.context, now));
    const accounts = [...this.context.accounts.keys()].map((name) => inAccount(this.context, name));
    report.reconcile = await step('reconcile', async () =>
      sumReconciled(
        await Promise.all(accounts.map((account) => reconcileUnsureCycles(account, now, { signal }))),
      ),
    );
    const external = new Map<string, ExternalScanResult | 'skipped'>();
    for (const account of accounts) {
      const scanned = await step(`external ${account.account.name}`, () =>
        this.scanExternal(account, now, signal),
      );
      if (scanned !== undefined) external.set(account.account.name, scanned);
    }
    report.external = external;
    report.approvals = await step('approvals', () => this.settleApprovals(now, signal));
    const running = this.options.strategies?.();
    if (running) {
      const targets = watchedTargets(running, this.context.dryRun);
      report.targets = [];
      for (const account of accounts) {
        const watched = await step(`targets ${account.account.name}`, () =>
          this.targetWatch.watch(account, targets, now),
        );
        report.targets.push(...(watched ?? []));
      }
      this.targetWatch.keepOnly(targets);
    }
    await step('gauges', () => this.refreshGauges());
    if (signal.aborted) report.stopped = true;
    return report;
  }

  private async scanExternal(
    context: AccountContext,
    now: Date,
    signal: AbortSignal,
  ): Promise<ExternalScanResult | 'skipped'> {
    const account = context.account.name;
    let scanWindow = this.scanWindows.get(account);
    if (!scanWindow) {
      scanWindow = new ExternalScanWindow(context.settings.reconcile);
      this.scanWindows.set(account, scanWindow);
    }
    const window = scanWindow.next(now);
    const result = await context.database.withSessionLock(externalScanLockKey(account), () =>
      recordExternalOrders(context, window, { signal }),
    );
    if (result === 'held_elsewhere') return 'skipped';
    scanWindow.scanned(window, result);
    if (!result.complete) {
      context.metrics.orderListsTruncated.inc({ scan: 'external' });
      context.logger.warn(
        {
          account,
          from: window.from,
          to: window.to,
          listed: result.listed,
          oldestListed: result.oldestListed,
        },
        'external-order scan read only the newest part of its window (engine.reconcile.maxPages); the older part is scanned next',
      );
    }
    return result;
  }

  /** Expires parked cycles past their deadline, then runs the approved ones this replica claims. */
  private async settleApprovals(now: Date, signal: AbortSignal): Promise<ApprovalsResult> {
    const { context } = this;
    const expired = await withDatabase(context, 'approvals_expire', () =>
      context.database.approvals.expireDue(now),
    );
    if (expired > 0) context.logger.info({ expired }, 'parked cycles expired without approval');
    return { expired, resumed: await this.claimApproved(signal) };
  }

  /** Claims and runs, one at a time, the approved cycles of the strategies this replica runs. */
  private async claimApproved(signal: AbortSignal): Promise<CycleReport[]> {
    const { context } = this;
    const running = (this.options.strategies?.() ?? []).filter((strategy) => strategy.enabled);
    const resumed: CycleReport[] = [];
    while (!signal.aborted) {
      const claimed = await withDatabase(context, 'approvals_claim', () =>
        context.database.approvals.claimApproved(
          context.replicaId,
          running.map((strategy) => strategy.name),
          1,
        ),
      );
      const [approved] = claimed;
      if (!approved) break;
      // One at a time: each runs on its own fresh quote, which must not wait behind another's.
      const current = running.find((candidate) => candidate.name === approved.cycle.strategy)!;
      const parked = await strategyOfParkedVersion(context, current, approved.cycle).catch(
        (error: unknown) => ({ gone: `its strategy version could not be read: ${errorCodeOf(error)}` }),
      );
      resumed.push(
        'gone' in parked
          ? await endApprovedCycle(context, approved.cycle, parked.gone)
          : await resumeApprovedCycle(
              inAccount(context, approved.cycle.account),
              parked.strategy,
              approved.cycle,
              approved.approvedMaxPrice,
            ),
      );
    }
    return resumed;
  }

  private async refreshGauges(): Promise<void> {
    const { database, metrics, settings } = this.context;
    const [unsure, halted, parked, envelopes] = await withDatabase(this.context, 'maintenance_gauges', () =>
      Promise.all([
        database.cycles.countByState('unsure'),
        database.strategies.listHalted(EVERY_ACCOUNT),
        database.approvals.listParked(EVERY_ACCOUNT),
        database.approvals.listEnvelopes(EVERY_ACCOUNT),
      ]),
    );
    metrics.unsureCycles.set(unsure);
    metrics.haltedStrategies.set(halted.length);
    const now = this.context.clock().getTime();
    const waitingLong = parked.filter((p) => now - p.parkedAt.getTime() > settings.approvals.waitingAlertMs);
    metrics.parkedCycles.set(parked.length + (await database.cycles.countByState('approved')));
    metrics.approvalsWaitingLong.set(waitingLong.length);
    for (const { cycle, parkedAt } of waitingLong) {
      this.context.logger.warn(
        { alert: 'approval_waiting', cycleId: cycle.id, strategy: cycle.strategy, parkedAt },
        'a parked cycle has waited long for approval (treasury-bot approvals)',
      );
    }
    metrics.envelopeRoom.reset();
    for (const envelope of envelopes) {
      const active = envelope.activeAt !== null && envelope.revokedAt === null;
      if (!active || envelope.validUntil.getTime() <= now) continue;
      metrics.envelopeRoom.set(
        { envelope: String(envelope.id), strategy: envelope.strategy },
        gaugeValue(envelope.room),
      );
    }
  }
}

function sumReconciled(results: readonly ReconcileResult[]): ReconcileResult {
  const sum: ReconcileResult = { examined: 0, adopted: 0, notPlaced: 0, ambiguous: 0, waiting: 0, errors: 0 };
  for (const result of results)
    for (const key of Object.keys(sum) as (keyof ReconcileResult)[]) sum[key] += result[key];
  return sum;
}
