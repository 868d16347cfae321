/**
 * Settlement tracking, as the composition root (src/app.ts) uses it: one object that owns, for each
 * account, its tracker, its webhook-log backfill and its balance snapshots, plus the webhook receiver of
 * every account with a secret and the survey of open orders. Start it after the database and the clients
 * exist; stop it before closing them.
 *
 * One tracker per account, each leasing only its account's orders and checking them with its account's
 * client: an order is never checked at another account's service, and one account's backlog, burst of
 * webhooks or slow service never delays another's checks. Each tracker keeps its own bound of
 * tracking.poll.maxRequestsPerSecond, because each account is a client of its own at the service (its own
 * limits, its own 429 pace, which its client's gate follows as well): a replica sends at most
 * accounts × maxRequestsPerSecond tracking requests, a bound the settings fix.
 */
import type { FastifyInstance } from 'fastify';
import type { PurchaseClient } from '../api/index.js';
import type { Settings } from '../config/index.js';
import type { Database } from '../db/index.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { createPeriodicTask } from '../runtime/periodic-task.js';
import { createWebhookBackfill, type WebhookBackfill } from './backfill.js';
import { type BalanceSnapshots, createBalanceSnapshots } from './balance-snapshots.js';
import { type SurveyReport, surveyOpenOrders } from './survey.js';
import { createTracker, type Tracker } from './tracker.js';
import { createWebhookReceiver, type WebhookReceiver } from './webhook-receiver.js';

export { type BackfillReport, createWebhookBackfill, type WebhookBackfill } from './backfill.js';
export { type BalanceSnapshots, createBalanceSnapshots } from './balance-snapshots.js';
export {
  type RegisteringAccount,
  type RegistrationResult,
  registerWebhooks,
  WANTED_EVENT_KINDS,
} from './registration.js';
export { type SurveyReport, surveyOpenOrders } from './survey.js';
export { createTracker, type NudgeOutcome, type Tracker, type TrackerDeps } from './tracker.js';
export {
  createWebhookReceiver,
  REDACTED_ACCOUNT_WEBHOOK_ROUTE,
  REDACTED_WEBHOOK_ROUTE,
  type ReceivingAccount,
  type WebhookReceiver,
  type WebhookReceiverDeps,
  webhookUrl,
} from './webhook-receiver.js';

/** One account as tracking sees it: its name, its client (tracking's own), and its webhook secret. */
export interface TrackedAccount {
  name: string;
  client: Pick<
    PurchaseClient,
    'getTracking' | 'getBalance' | 'getAllWebhookLogs' | 'setWebhookConfig' | 'getWebhookConfig'
  >;
  /** Unset: the account has no receiver path, and its orders are followed by polling alone. */
  webhookSecret?: string;
}

export interface TrackingDeps {
  database: Database;
  accounts: readonly TrackedAccount[];
  metrics: Metrics;
  logger: Logger;
  /** `engine` for databaseTimeoutMs: tracking's database calls are bounded like the engine's. */
  settings: Pick<Settings, 'tracking'> & { engine: Pick<Settings['engine'], 'databaseTimeoutMs'> };
  clock?: () => Date;
  /** This replica's name on order leases. */
  owner?: string;
}

/** What tracking runs for one account. */
export interface AccountTracking {
  tracker: Tracker;
  /** undefined when the account has no webhook secret: no deliveries of its reach us to backfill. */
  backfill: WebhookBackfill | undefined;
  balances: BalanceSnapshots;
}

export interface Tracking {
  /** By account name. */
  accounts: ReadonlyMap<string, AccountTracking>;
  /** undefined when no account has a webhook secret: the receiver is off. */
  receiver: WebhookReceiver | undefined;
  survey(): Promise<SurveyReport>;
  /** Adds the receiver's route (if any) to the worker's HTTP server; call before it listens. */
  registerRoutes(app: FastifyInstance): void;
  start(): void;
  stop(): Promise<void>;
}

export function createTracking(deps: TrackingDeps): Tracking {
  const logger = deps.logger.child({ component: 'tracking' });
  const settings = deps.settings.tracking;
  const clock = deps.clock ?? (() => new Date());
  const common = {
    database: deps.database,
    metrics: deps.metrics,
    databaseTimeoutMs: deps.settings.engine.databaseTimeoutMs,
    logger,
    clock,
  };
  const accounts = new Map<string, AccountTracking>();
  const receiving: { name: string; secret: string; tracker: Tracker }[] = [];
  for (const account of deps.accounts) {
    const { name, client, webhookSecret } = account;
    const tracker = createTracker({ ...common, account: name, client, settings, owner: deps.owner });
    const backfill =
      webhookSecret === undefined
        ? undefined
        : createWebhookBackfill({
            client,
            tracker,
            logger: logger.child({ account: name }),
            settings: settings.backfill,
          });
    const balances = createBalanceSnapshots({ ...common, account: name, client, settings: settings.balance });
    accounts.set(name, { tracker, backfill, balances });
    if (webhookSecret !== undefined) receiving.push({ name, secret: webhookSecret, tracker });
  }
  const receiver =
    receiving.length === 0 ? undefined : createWebhookReceiver({ ...common, accounts: receiving, settings });
  const names = deps.accounts.map((account) => account.name);
  const survey = () => surveyOpenOrders({ ...common, stuckAfterMs: settings.stuckAfterMs, accounts: names });
  const surveyor = createPeriodicTask({
    name: 'tracking survey',
    intervalMs: settings.surveyIntervalMs,
    logger,
    run: () => survey(),
  });
  const parts = [...accounts.values()];
  let started = false;

  return {
    accounts,
    receiver,
    survey,
    registerRoutes(app) {
      receiver?.register(app);
    },
    start() {
      if (started) return;
      started = true;
      for (const { tracker } of parts) tracker.start();
      surveyor.start();
      receiver?.start();
      for (const { backfill, balances } of parts) {
        backfill?.start();
        balances.start();
      }
    },
    async stop() {
      if (!started) return;
      started = false;
      await Promise.all(parts.flatMap(({ backfill, balances }) => [balances.stop(), backfill?.stop()]));
      await surveyor.stop();
      // Together, not receiver first: the receiver waits for its events' nudges, which queue behind the
      // trackers' rate limits; stopping the trackers fails those waits at once, and the events stay pending
      // for the next start. Otherwise a burst of deliveries would hold the stop for burst ÷ rate seconds.
      await Promise.all([receiver?.stop(), ...parts.map(({ tracker }) => tracker.stop())]);
    },
  };
}
