/**
 * The periodic housekeeping of a running worker, also run once at start and by `treasury-bot reconcile`:
 * crash recovery, reconciliation of unsure cycles, the external-order scan, and the gauges that follow
 * from them. Unsure cycles are split between replicas by leases; the external scan runs on one replica at
 * a time under a session advisory lock held on a reserved connection.
 */
import { errorCodeOf } from '../errors.js';
import { createPeriodicTask, type PeriodicTask } from '../runtime/periodic-task.js';
import type { EngineContext } from './context.js';
import { withDatabase } from './engine-errors.js';
import { type ExternalScanResult, recordExternalOrders } from './external-orders.js';
import { ExternalScanWindow } from './external-scan-window.js';
import { type ReconcileResult, reconcileUnsureCycles } from './reconcile.js';
import { type RecoveryResult, recoverAbandonedCycles } from './recovery.js';

/** Arbitrary constant shared by every replica: "treasury-bot external order scan". */
const EXTERNAL_SCAN_LOCK_KEY = '7304116215388002';

export interface MaintenanceReport {
  recovery?: RecoveryResult;
  reconcile?: ReconcileResult;
  external?: ExternalScanResult | 'skipped';
  errors: string[];
  /** The pass was cut short by stop(); the steps it did not finish run on the next start. */
  stopped?: true;
}

export class Maintenance {
  private readonly scanWindow: ExternalScanWindow;
  /**
   * stop() aborts the pass in flight: its requests would otherwise hold the worker's stop for the client's
   * timeouts times its retries (tens of seconds against a service that accepts connections and never answers).
   */
  private readonly task: PeriodicTask<MaintenanceReport>;
  /** The instant runOnce(now) asked for, read as its pass starts (runNow starts a run synchronously). */
  private requestedNow: Date | undefined;

  constructor(private readonly context: EngineContext) {
    this.scanWindow = new ExternalScanWindow(context.settings.reconcile);
    this.task = createPeriodicTask({
      name: 'maintenance',
      intervalMs: context.settings.reconcile.intervalMs,
      logger: context.logger,
      run: (signal) => this.pass(this.requestedNow ?? context.clock(), signal),
    });
  }

  start(): void {
    this.task.start();
  }

  stop(): Promise<void> {
    return this.task.stop();
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
    report.reconcile = await step('reconcile', () => reconcileUnsureCycles(this.context, now, { signal }));
    report.external = await step('external', () => this.scanExternal(now, signal));
    await step('gauges', () => this.refreshGauges());
    if (signal.aborted) report.stopped = true;
    return report;
  }

  private async scanExternal(now: Date, signal: AbortSignal): Promise<ExternalScanResult | 'skipped'> {
    const window = this.scanWindow.next(now);
    const result = await this.context.database.withSessionLock(EXTERNAL_SCAN_LOCK_KEY, () =>
      recordExternalOrders(this.context, window, { signal }),
    );
    if (result === 'held_elsewhere') return 'skipped';
    this.scanWindow.scanned(window, result);
    if (!result.complete) {
      this.context.metrics.orderListsTruncated.inc({ scan: 'external' });
      this.context.logger.warn(
        { from: window.from, to: window.to, listed: result.listed, oldestListed: result.oldestListed },
        'external-order scan read only the newest part of its window (engine.reconcile.maxPages); the older part is scanned next',
      );
    }
    return result;
  }

  private async refreshGauges(): Promise<void> {
    const { database, metrics } = this.context;
    const [unsure, halted] = await withDatabase(this.context, 'maintenance_gauges', () =>
      Promise.all([database.cycles.countByState('unsure'), database.strategies.listHalted()]),
    );
    metrics.unsureCycles.set(unsure);
    metrics.haltedStrategies.set(halted.length);
  }
}
