/**
 * Periodic balance snapshots of one account: GET /client/balance with the account's client, stored under
 * the account (balances.record) for the audit trail and exported as the account's gauges for dashboards
 * and alerts (credit running out, withdrawals blocked).
 */
import type { Balance, PurchaseClient } from '../api/index.js';
import type { TrackingSettings } from '../config/schema.js';
import type { BalanceSnapshot, Database } from '../db/index.js';
import type { Logger } from '../observability/logger.js';
import { gaugeValue, type Metrics } from '../observability/metrics.js';
import { createPeriodicTask } from '../runtime/periodic-task.js';
import { callDatabase } from './database-call.js';

export interface BalanceSnapshotsDeps {
  /** The account whose balance `client` reads. */
  account: string;
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
  const { account } = deps;
  const logger = deps.logger.child({ account });

  async function takeSnapshot(signal?: AbortSignal): Promise<BalanceSnapshot> {
    const balance = await deps.client.getBalance({ signal });
    const snapshot = await callDatabase(deps, 'balance_record', () =>
      deps.database.balances.record({ ...balance, account, takenAt: clock() }),
    );
    exportBalance(deps.metrics, account, balance);
    logger.debug(
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
    logger,
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

function exportBalance(metrics: Metrics, account: string, balance: Balance): void {
  const { fiat, crypto, credit } = balance;
  metrics.balance.set({ account, currency: fiat.currency }, gaugeValue(fiat.balance));
  metrics.balance.set({ account, currency: crypto.currency }, gaugeValue(crypto.balance));
  metrics.credit.set({ account, kind: 'total' }, gaugeValue(credit.total));
  metrics.credit.set({ account, kind: 'used' }, gaugeValue(credit.used));
  metrics.credit.set({ account, kind: 'available' }, gaugeValue(credit.available));
  metrics.canWithdraw.set({ account }, balance.canWithdraw ? 1 : 0);
}
