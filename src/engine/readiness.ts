import type { PurchaseClient } from '../api/index.js';
import type { Database } from '../db/index.js';
import type { ReadinessCheck, ReadinessReport } from '../observability/http-server.js';
import type { Metrics } from '../observability/metrics.js';
import type { ApiObserver } from './api-observer.js';
import { errorCodeOf, withDatabase } from './engine-errors.js';
import type { KillSwitch } from './kill-switch.js';

export interface ReadinessDeps {
  database: Database;
  client: PurchaseClient;
  observer: ApiObserver;
  killSwitch: KillSwitch;
  clock: () => Date;
  metrics: Metrics;
  settings: { databaseTimeoutMs: number };
  migrated: () => boolean;
  /** The service counts as reachable if it answered within this; otherwise /readyz asks it (a balance read). */
  serviceFreshMs?: number;
}

/**
 * /readyz: the database answers, migrations are applied, the service answered recently. Paused is a label,
 * not a failure: a paused replica is healthy, it just does not buy.
 */
export function createReadiness(deps: ReadinessDeps): () => Promise<ReadinessReport> {
  const freshMs = deps.serviceFreshMs ?? 60_000;
  let probing: Promise<ReadinessCheck> | undefined;

  const probeService = async (): Promise<ReadinessCheck> => {
    const last = deps.observer.lastAnswerAt();
    if (last && deps.clock().getTime() - last.getTime() < freshMs) return { ok: true };
    probing ??= deps.client
      .getBalance({ signal: AbortSignal.timeout(2_000) })
      .then(
        (): ReadinessCheck => ({ ok: true }),
        (error: unknown): ReadinessCheck => {
          // An HTTP answer, even an error status, proves the service is there.
          const answered = deps.observer.lastAnswerAt();
          if (answered && deps.clock().getTime() - answered.getTime() < freshMs) return { ok: true };
          return { ok: false, detail: errorCodeOf(error) };
        },
      )
      .finally(() => {
        probing = undefined;
      });
    return probing;
  };

  const checkDatabase = async (): Promise<ReadinessCheck> => {
    try {
      await withDatabase(deps, 'readiness_ping', () => deps.database.ping(), 2_000);
      return { ok: true };
    } catch (error) {
      return { ok: false, detail: errorCodeOf(error) };
    }
  };

  return async () => {
    const [database, service] = await Promise.all([checkDatabase(), probeService()]);
    const migrations: ReadinessCheck = deps.migrated() ? { ok: true } : { ok: false, detail: 'not applied' };
    let paused = deps.killSwitch.lastKnown()?.paused ?? false;
    if (database.ok) {
      paused = await withDatabase(deps, 'readiness_paused', () => deps.killSwitch.isPaused(), 2_000).catch(
        () => paused,
      );
    }
    const checks = { database, migrations, service };
    return { ready: Object.values(checks).every((check) => check.ok), paused, checks };
  };
}
