import { type Database, pendingMigrations } from '../db/index.js';
import { errorCodeOf } from '../errors.js';
import type { ReadinessCheck, ReadinessReport } from '../observability/http-server.js';
import type { Metrics } from '../observability/metrics.js';
import { withTimeLimit } from '../runtime/time-limit.js';
import type { ApiObserver } from './api-observer.js';
import type { AccountLink } from './context.js';
import { withDatabase } from './engine-errors.js';
import type { KillSwitch } from './kill-switch.js';

export interface ReadinessDeps {
  database: Database;
  /** Every account's service must be reachable: a replica that cannot buy for one entity is not ready. */
  accounts: ReadonlyMap<string, AccountLink>;
  observer: ApiObserver;
  killSwitch: KillSwitch;
  clock: () => Date;
  metrics: Metrics;
  settings: { databaseTimeoutMs: number; databaseClockSkewMs: number };
  /** The service counts as reachable if it answered within this; otherwise a check asks it (a balance read). */
  serviceFreshMs?: number;
  /** Where the migrations this code needs are (tests); default the package's drizzle/ folder. */
  migrationsFolder?: string;
}

export interface Readiness {
  /** What /readyz answers: the state the last check left, never a request of its own. */
  report(): ReadinessReport;
  /** One check of the database, the migrations, the service and the kill switch; run periodically. */
  refresh(signal?: AbortSignal): Promise<void>;
}

const NOT_CHECKED: ReadinessCheck = { ok: false, detail: 'not checked yet' };

/**
 * Readiness: the database answers, every migration the code needs is applied, the service answered recently.
 * Paused is a label, not a failure: a paused replica is healthy, it just does not buy. The checks run on the
 * worker's schedule, not per request: a probe (or anyone who can reach /readyz) must never make the worker
 * call the service or the database.
 */
export function createReadiness(deps: ReadinessDeps): Readiness {
  const freshMs = deps.serviceFreshMs ?? 60_000;
  let state: ReadinessReport = {
    ready: false,
    paused: false,
    checks: { database: NOT_CHECKED, migrations: NOT_CHECKED, service: NOT_CHECKED, clock: NOT_CHECKED },
  };

  const answeredRecently = (account: string) => {
    const last = deps.observer.lastAnswerAt(account);
    return last !== undefined && deps.clock().getTime() - last.getTime() < freshMs;
  };

  /** The account's problem, or undefined when its service is reachable. */
  const checkAccount = async ({ name, client }: AccountLink, signal?: AbortSignal) => {
    if (answeredRecently(name)) return undefined;
    try {
      await withTimeLimit(2_000, (limited) => client.getBalance({ signal: limited }), signal);
      return undefined;
    } catch (error) {
      // An HTTP answer, even an error status, proves the service is there.
      return answeredRecently(name) ? undefined : `${name}: ${errorCodeOf(error)}`;
    }
  };

  const checkService = async (signal?: AbortSignal): Promise<ReadinessCheck> => {
    const accounts = [...deps.accounts.values()];
    const problems = (await Promise.all(accounts.map((account) => checkAccount(account, signal)))).filter(
      (problem) => problem !== undefined,
    );
    if (problems.length === 0) return { ok: true };
    // One account alone keeps the detail it always had: the error code.
    const detail =
      accounts.length === 1 ? problems[0]!.slice(accounts[0]!.name.length + 2) : problems.join('; ');
    return { ok: false, detail };
  };

  /**
   * This replica's clock against the database's, which judges deadlines and windows: measured as the
   * database's reading less the middle of our readings before and after it.
   */
  const checkClock = async (): Promise<ReadinessCheck> => {
    try {
      const before = deps.clock().getTime();
      const databaseMs = await withDatabase(deps, 'readiness_clock', () => deps.database.clockMs(), 2_000);
      const skewMs = (before + deps.clock().getTime()) / 2 - databaseMs;
      deps.metrics.databaseClockSkew.set(skewMs / 1000);
      if (Math.abs(skewMs) <= deps.settings.databaseClockSkewMs) return { ok: true };
      const seconds = (Math.abs(skewMs) / 1000).toFixed(1);
      return {
        ok: false,
        detail: `this replica's clock is ${skewMs < 0 ? 'behind' : 'ahead of'} the database's by ${seconds} s (engine.databaseClockSkewMs ${deps.settings.databaseClockSkewMs}): fix its time synchronisation`,
      };
    } catch (error) {
      return { ok: false, detail: errorCodeOf(error) };
    }
  };

  const checkDatabase = async (): Promise<{ database: ReadinessCheck; migrations: ReadinessCheck }> => {
    try {
      await withDatabase(deps, 'readiness_ping', () => deps.database.ping(), 2_000);
    } catch (error) {
      const detail = errorCodeOf(error);
      return { database: { ok: false, detail }, migrations: { ok: false, detail: 'database unavailable' } };
    }
    try {
      const pending = await withDatabase(
        deps,
        'readiness_migrations',
        () => pendingMigrations(deps.database, { folder: deps.migrationsFolder }),
        2_000,
      );
      const migrations: ReadinessCheck =
        pending.length === 0 ? { ok: true } : { ok: false, detail: `not applied: ${pending.join(', ')}` };
      return { database: { ok: true }, migrations };
    } catch (error) {
      return { database: { ok: true }, migrations: { ok: false, detail: errorCodeOf(error) } };
    }
  };

  return {
    // The pause is the kill switch's last known state (kept by the worker's own reads), not this check's.
    report: () => ({ ...state, paused: deps.killSwitch.lastKnown()?.paused ?? state.paused }),
    async refresh(signal) {
      const [{ database, migrations }, service, clock] = await Promise.all([
        checkDatabase(),
        checkService(signal),
        checkClock(),
      ]);
      let paused = deps.killSwitch.lastKnown()?.paused ?? false;
      if (database.ok) {
        paused = await withDatabase(deps, 'readiness_paused', () => deps.killSwitch.isPaused(), 2_000).catch(
          () => paused,
        );
      }
      const checks = { database, migrations, service, clock };
      state = { ready: Object.values(checks).every((check) => check.ok), paused, checks };
    },
  };
}
