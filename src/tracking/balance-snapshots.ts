/**
 * Periodic balance snapshots: GET /client/balance, stored (balances.record) for the audit trail and
 * exported as gauges for dashboards and alerts (credit running out, withdrawals blocked).
 */
import type { Balance, PurchaseClient } from '../api/index.js';
import type { TrackingSettings } from '../config/schema.js';
import type { BalanceSnapshot, Database } from '../db/index.js';
import type { Logger } from '../observability/logger.js';
import { gaugeValue, type Metrics } from '../observability/metrics.js';
import { createPeriodicTask } from '../runtime/periodic-task.js';
import { callDatabase } from './database-call.js';

export interface BalanceSnapshotsDeps {
  database: Database;
  client: Pick<PurchaseClient, 'getBalance'>;
  metrics: Metrics;
  /** engine.databaseTimeoutMs: a snapshot's write waits no longer. */
  databaseTimeoutMs: number;
  logger: Logger;
  settings: TrackingSettings['balance'];
  clock?: () => Date;
}

export function createBalanceSnapshots(deps: BalanceSnapshotsDeps) {
  const clock = deps.clock ?? (() => new Date());

  async function takeSnapshot(signal?: AbortSignal): Promise<BalanceSnapshot> {
    const balance = await deps.client.getBalance({ signal });
    const snapshot = await callDatabase(deps, 'balance_record', () =>
      deps.database.balances.record({ ...balance, takenAt: clock() }),
    );
    exportBalance(deps.metrics, balance);
    deps.logger.debug(
      {
        fiat: balance.fiat.balance.toFixed(),
        crypto: balance.crypto.balance.toFixed(),
        creditAvailable: balance.credit.available.toFixed(),
        canWithdraw: balance.canWithdraw,
      },
      'balance snapshot',
    );
    return snapshot;
  }

  const task = createPeriodicTask({
    name: 'balance snapshot',
    intervalMs: deps.settings.intervalMs,
    logger: deps.logger,
    run: takeSnapshot,
  });

  return {
    takeSnapshot,
    start() {
      if (deps.settings.enabled) task.start();
    },
    stop: () => task.stop(),
  };
}

export type BalanceSnapshots = ReturnType<typeof createBalanceSnapshots>;

function exportBalance(metrics: Metrics, balance: Balance): void {
  metrics.balance.set({ currency: balance.fiat.currency }, gaugeValue(balance.fiat.balance));
  metrics.balance.set({ currency: balance.crypto.currency }, gaugeValue(balance.crypto.balance));
  metrics.credit.set({ kind: 'total' }, gaugeValue(balance.credit.total));
  metrics.credit.set({ kind: 'used' }, gaugeValue(balance.credit.used));
  metrics.credit.set({ kind: 'available' }, gaugeValue(balance.credit.available));
  metrics.canWithdraw.set(balance.canWithdraw ? 1 : 0);
}
