/**
 * The periodic housekeeping of a running worker, also run once at start and by `treasury-bot reconcile`:
 * crash recovery, reconciliation of unsure cycles, the external-order scan, and the gauges that follow
 * from them. Unsure cycles are split between replicas by leases; the external scan runs on one replica at
 * a time under a session advisory lock held on a reserved connection.
 */
import type { EngineContext } from './context.js';
import { errorCodeOf, withDatabase } from './engine-errors.js';
import { type ExternalScanResult, recordExternalOrders } from './external-orders.js';
import { type ReconcileResult, reconcileUnsureCycles } from './reconcile.js';
import { type RecoveryResult, recoverAbandonedCycles } from './recovery.js';

/** Arbitrary constant shared by every replica: "treasury-bot external order scan". */
const EXTERNAL_SCAN_LOCK_KEY = '7304116215388002';
/** Each scan re-reads a little of the previous window, in case an order became visible late. */
const SCAN_OVERLAP_MS = 60_000;

export interface MaintenanceReport {
  recovery?: RecoveryResult;
  reconcile?: ReconcileResult;
  external?: ExternalScanResult | 'skipped';
  errors: string[];
}

export class Maintenance {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<MaintenanceReport> | undefined;
  private scannedUntil: Date | undefined;

  constructor(private readonly context: EngineContext) {}

  start(): void {
    if (this.timer) return;
    void this.runOnce();
    this.timer = setInterval(() => void this.runOnce(), this.context.settings.reconcile.intervalMs);
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** One pass; a pass already under way is joined rather than doubled. */
  runOnce(now?: Date): Promise<MaintenanceReport> {
    this.running ??= this.pass(now ?? this.context.clock()).finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async pass(now: Date): Promise<MaintenanceReport> {
    const report: MaintenanceReport = { errors: [] };
    const step = async <T>(name: string, work: () => Promise<T>): Promise<T | undefined> => {
      try {
        return await work();
      } catch (error) {
        report.errors.push(`${name}: ${errorCodeOf(error)}`);
        this.context.logger.warn(
          { step: name, errorCode: errorCodeOf(error), err: error },
          'maintenance step failed',
        );
        return undefined;
      }
    };
    report.recovery = await step('recovery', () => recoverAbandonedCycles(this.context, now));
    report.reconcile = await step('reconcile', () => reconcileUnsureCycles(this.context, now));
    report.external = await step('external', () => this.scanExternal(now));
    await step('gauges', () => this.refreshGauges());
    return report;
  }

  private async scanExternal(now: Date): Promise<ExternalScanResult | 'skipped'> {
    const { reconcile } = this.context.settings;
    const to = new Date(now.getTime() - reconcile.visibilityLagMs);
    const earliest = now.getTime() - reconcile.externalLookbackMs;
    const from = new Date(Math.max(earliest, (this.scannedUntil?.getTime() ?? earliest) - SCAN_OVERLAP_MS));
    const result = await this.context.database.withReservedConnection(async (connection) => {
      const [row] = await connection.query('select pg_try_advisory_lock($1::bigint) as locked', [
        EXTERNAL_SCAN_LOCK_KEY,
      ]);
      if (row?.locked !== true) return 'skipped' as const;
      try {
        return await recordExternalOrders(this.context, { from, to });
      } finally {
        await connection.query('select pg_advisory_unlock($1::bigint)', [EXTERNAL_SCAN_LOCK_KEY]);
      }
    });
    if (result !== 'skipped') this.scannedUntil = to;
    return result;
  }

  private async refreshGauges(): Promise<void> {
    const { database, metrics } = this.context;
    const [unsure, halted] = await withDatabase(this.context, 'maintenance_gauges', () =>
      Promise.all([database.cycles.listByState('unsure', 10_000), database.strategies.listHalted()]),
    );
    metrics.unsureCycles.set(unsure.length);
    metrics.haltedStrategies.set(halted.length);
  }
}
