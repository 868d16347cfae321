/**
 * The composition root: settings, logger, metrics, the purchase service (or the built-in sandbox in demo
 * mode), the database, the client, the engine, settlement tracking and the HTTP server, opened in that
 * order and closed in the reverse order. `run` opens everything; `once` and the admin commands (pause,
 * resume, reconcile) only what they need. start() and stop() are idempotent.
 */
import type { FastifyInstance } from 'fastify';
import type { DestinationStream } from 'pino';
import { createServiceGate, type PurchaseClient } from './api/index.js';
import {
  type AccountSettings,
  channelSecrets,
  clearTextWarnings,
  consoleHosts,
  createAccountClient,
  isDemo,
  loadSettings,
  planListeners,
  requireToken,
  type Settings,
} from './config/index.js';
import { printDemoAdmin, settleDemoAdmin } from './console/demo-admin.js';
import { registerConsole } from './console/server.js';
import {
  type Database,
  type MigrationResult,
  type OpenWait,
  openConsoleStore,
  openMigratedDatabase,
  retryWhileUnreachable,
  type SchemaStep,
  type StartupWait,
} from './db/index.js';
import {
  type AccountLink,
  type ApiObserver,
  AUTOMATION,
  createApiObserver,
  createLiveness,
  createReadiness,
  createReplicaId,
  cycleConcurrency,
  type EngineContext,
  KillSwitch,
  OnceRefusal,
  observeGate,
  type VersionPolicy,
  Worker,
} from './engine/index.js';
import { createNotifier, routerFor } from './notify/index.js';
import {
  createHttpServer,
  createReceiverServer,
  type ListedRoute,
  listedRoutes,
  listen,
} from './observability/http-server.js';
import { createLogger, type Logger } from './observability/logger.js';
import { createMetrics, type Metrics } from './observability/metrics.js';
import { createProcessFacts, SAMPLE_MS } from './observability/process-facts.js';
import { registerRestApi } from './rest-api/server.js';
import { createPeriodicTask } from './runtime/periodic-task.js';
import { createTracking, registerWebhooks, type TrackedAccount } from './tracking/index.js';

export type AppMode = 'run' | 'once' | 'admin';

/** How often readiness is checked; /readyz answers from the last check. */
const READINESS_INTERVAL_MS = 5_000;

export interface AppOptions {
  mode: AppMode;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Where log lines go; commands whose stdout carries results pass stderr. Default stdout. */
  logDestination?: DestinationStream;
  clock?: () => Date;
}

export class App {
  readonly settings: Settings;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly replicaId = createReplicaId();
  private readonly clock: () => Date;
  private readonly releasers: { name: string; release: () => Promise<void> }[] = [];
  private opening: Promise<void> | undefined;
  private starting: Promise<void> | undefined;
  private stopping: Promise<void> | undefined;
  /** A stop that arrives while start still waits for the database ends that wait. */
  private readonly startAborted = new AbortController();
  private engine: EngineContext | undefined;
  private runningWorker: Worker | undefined;
  private bound: { ops?: number; webhook?: number } = {};
  private opsListener: FastifyInstance | undefined;

  constructor(private readonly options: AppOptions) {
    const env = options.env ?? process.env;
    this.settings = loadSettings({ env, cwd: options.cwd });
    this.clock = options.clock ?? (() => new Date());
    this.logger = createLogger({
      level: this.settings.log.level,
      secrets: secretsOf(this.settings),
      destination: options.logDestination,
      name: 'treasury-bot',
    });
    this.metrics = createMetrics({ defaultMetrics: options.mode === 'run' });
    for (const warning of clearTextWarnings(this.settings)) this.logger.warn(warning);
  }

  /** The engine's dependencies; available once start() resolved. */
  /**
   * How strategy changes are governed (strategies.changes), and who the worker records versions and
   * applications as: TREASURY_ACTOR, else `automation` (the worker acts for nobody in particular).
   */
  get versionPolicy(): VersionPolicy {
    const env = this.options.env ?? process.env;
    return { changes: this.settings.strategies.changes, actor: env.TREASURY_ACTOR?.trim() || AUTOMATION };
  }

  get context(): EngineContext {
    if (!this.engine) throw new Error('the app is not started');
    return this.engine;
  }

  get worker(): Worker | undefined {
    return this.runningWorker;
  }

  /** The bound ports of the listeners in `run` (useful with port 0 in the addresses). */
  get ports(): { ops?: number; webhook?: number } {
    return this.bound;
  }

  /** Every route of the ops listener in `run` (for the route walk of the tests). */
  get opsRoutes(): readonly ListedRoute[] {
    return this.opsListener ? listedRoutes(this.opsListener) : [];
  }

  start(): Promise<void> {
    this.opening ??= this.open();
    this.starting ??= this.opening.catch(async (error: unknown) => {
      await this.stop();
      throw error;
    });
    return this.starting;
  }

  stop(): Promise<void> {
    this.stopping ??= this.close();
    return this.stopping;
  }

  async reload(): Promise<void> {
    await this.runningWorker?.reload();
  }

  private onStop(name: string, release: () => Promise<void>): void {
    this.releasers.push({ name, release });
  }

  private async open(): Promise<void> {
    const { settings, logger, metrics, clock, options } = this;
    const addresses = await this.openService();
    const concurrency = cycleConcurrency(settings.engine, summedRateLimit(settings.accounts));
    // Every statement of the start waits for a database coming back (a failover, a deploy), as the opening does.
    const startupWait: StartupWait = {
      // Only the long-running worker waits; `once` and the admin commands report the outage at once.
      waitMs: options.mode === 'run' ? settings.engine.startupDatabaseWaitMs : 0,
      signal: this.startAborted.signal,
      onRetry: (error, attempt, delayMs) =>
        logger.warn({ err: error, attempt, delayMs }, 'database not reachable at start; waiting for it'),
    };
    const { database, migration } = await openDatabaseFromSettings(
      settings,
      { maxConnections: settings.database.connections, clock },
      startupWait,
    );
    this.onStop('database', () => database.close());
    if (migration.applied.length > 0) logger.info({ applied: migration.applied }, 'database migrated');

    const observer = createApiObserver(metrics, clock);
    const services = addresses.map((address) => this.openAccount(address, observer, concurrency));
    const accounts = new Map<string, AccountLink>(services.map((service) => [service.name, service]));

    const killSwitch = new KillSwitch({
      control: database.control,
      cacheMs: settings.engine.killSwitchCacheMs,
      clock,
      metrics,
      onChange: (state) => {
        if (state.paused) logger.warn({ ...state }, 'KILL SWITCH ON: every cycle is skipped until resume');
        else if (state.changedAt !== null)
          logger.info({ ...state }, 'kill switch off: cycles place orders again');
      },
    });
    this.engine = {
      database,
      accounts,
      metrics,
      logger,
      // The limiter the worker builds from this is the one the trading pool was sized for.
      settings: { ...settings.engine, concurrency },
      dryRun: settings.dryRun,
      replicaId: this.replicaId,
      cyclesInFlight: new Set(),
      clock,
      apiPace: () => summedPace(services),
      killSwitch,
      tolerances: settings.engine.quoteChecks,
    };
    if (settings.dryRun) logger.warn('DRY RUN: cycles decide and record, no order is ever placed');
    if (options.mode !== 'run') return;

    const listeners = planListeners(settings);
    if (listeners.deprecation) logger.warn(listeners.deprecation);
    const readiness = createReadiness({
      database,
      accounts,
      observer,
      killSwitch,
      clock,
      metrics,
      settings: settings.engine,
    });
    const readinessChecks = createPeriodicTask({
      name: 'readiness check',
      intervalMs: READINESS_INTERVAL_MS,
      run: (signal) => readiness.refresh(signal),
      logger,
      runAtStart: false,
    });
    // Known before the listener answers: a probe never sees "not checked yet" from a replica that is up.
    await readiness.refresh(this.startAborted.signal);
    readinessChecks.start();
    this.onStop('readiness checks', () => readinessChecks.stop());
    const ops = createHttpServer({
      metrics,
      logger,
      readiness: readiness.report,
      trustedProxies: settings.ops.trustedProxies,
    });
    this.opsListener = ops;
    this.onStop('ops listener', () => ops.close());
    const consoleStore = openConsoleStore(database, clock);
    // The console's "alerts that fire now" reads this process's counters over the rules' windows.
    const processFacts = createProcessFacts(metrics, clock);
    const factSampling = createPeriodicTask({
      name: 'alert facts sampling',
      intervalMs: SAMPLE_MS,
      run: () => processFacts.sample(),
      logger,
    });
    factSampling.start();
    this.onStop('alert facts sampling', () => factSampling.stop());
    registerConsole(ops, {
      database,
      store: consoleStore,
      clock,
      logger,
      accounts,
      processFacts,
      metrics,
      hosts: consoleHosts(settings, listeners.ops),
      reports: { timeZone: settings.reports.timezone },
      requireTotp: settings.console.requireTotp,
      ...(settings.console.oidc ? { oidc: settings.console.oidc } : {}),
      localLogin: settings.console.localLogin,
    });
    registerRestApi(ops, {
      database,
      store: consoleStore,
      clock,
      logger,
      accounts,
      hosts: consoleHosts(settings, listeners.ops),
      timeZone: settings.reports.timezone,
      requestsPerMinute: settings.console.apiRequestsPerMinute,
      // The worker is made below, once the listener is ready; a request before it is a WORKER_NOT_RUNNING.
      runOnce: (strategy, slot) => {
        if (!this.runningWorker) throw new OnceRefusal('WORKER_NOT_RUNNING', 'the worker is still starting');
        return this.runningWorker.runOnce(strategy, slot);
      },
    });
    // Settled before the console answers, so that a demo admin this start retires never logs in again.
    const demoAdminPassword = await retryWhileUnreachable(
      () =>
        settleDemoAdmin(consoleStore, {
          command: 'run',
          demo: isDemo(settings),
          embedded: database.kind === 'pglite',
        }),
      startupWait,
    );
    // The receiver's own listener serves nothing but its route: never the console, never /metrics.
    const webhook = listeners.webhook ? createReceiverServer() : undefined;
    if (webhook) this.onStop('webhook listener', () => webhook.close());
    await this.openTracking(database, services, webhook);
    this.bound.ops = await listen(ops, listeners.ops.host, listeners.ops.port);
    logger.info(
      { host: listeners.ops.host, port: this.bound.ops },
      'ops listener listening (/metrics, /healthz, /readyz, the console, the REST API under /api/v1)',
    );
    if (listeners.webhook && webhook) {
      this.bound.webhook = await listen(webhook, listeners.webhook.host, listeners.webhook.port);
      logger.info({ host: listeners.webhook.host, port: this.bound.webhook }, 'webhook listener listening');
    }
    if (demoAdminPassword !== undefined) {
      printDemoAdmin(demoAdminPassword, `http://${listeners.ops.host}:${this.bound.ops}/`);
    } else if (isDemo(settings)) {
      logger.warn(
        'no demo admin: it is made only on an embedded database without people of its own that never ran against a real service; log in as a person of this database',
      );
    }
    // Only once the receiver listens may the service be told to deliver to it; a failure is logged there.
    await registerWebhooks(trackedAccounts(services), settings, logger);

    // Before the worker, so that it stops after the drain, with the news of the last cycles written.
    const notifier = createNotifier({ database, settings: settings.notifications, metrics, logger, clock });
    notifier.start();
    this.onStop('notifications', () => notifier.stop());

    // Registered before the first cycle, removed after the drain (stops run in reverse order).
    const liveness = createLiveness(this.engine);
    await liveness.start();
    this.onStop('replica liveness', () => liveness.stop());
    const worker = new Worker(this.engine, {
      strategiesPath: settings.strategies.path,
      startSignal: this.startAborted.signal,
      versions: this.versionPolicy,
    });
    this.runningWorker = worker;
    this.onStop('worker', () => worker.stop());
    await worker.start();
  }

  /**
   * Settlement tracking (src/tracking): started after the database and the client, with its webhook route
   * registered on the HTTP server before it listens; stopped before them.
   */
  private async openTracking(
    database: Database,
    accounts: readonly AccountService[],
    http: FastifyInstance | undefined,
  ) {
    const { settings, logger, metrics, clock } = this;
    const tracking = createTracking({
      database,
      accounts: trackedAccounts(accounts),
      metrics,
      logger,
      settings,
      clock,
      owner: this.replicaId,
    });
    if (http) tracking.registerRoutes(http);
    tracking.start();
    this.onStop('tracking', () => tracking.stop());
  }

  /** Each account's service, or the built-in sandbox in this process when no account names one. */
  private async openService(): Promise<readonly AccountAddress[]> {
    // Orders step every 2 s so that a demo shows settlement within a minute.
    const service = await openService(this.settings, { sandboxStepMs: 2_000 });
    if (service.demo) {
      this.onStop('sandbox', service.demo.close);
      this.logger.warn({ url: service.accounts[0]?.baseUrl }, service.demo.notice);
    }
    return service.accounts;
  }

  /**
   * One account's clients: each with its own gate (the pace learnt from that account's 429s, capped by its
   * api.rateLimit, and the pause its 429s ask for), so one entity's limits never slow another's orders.
   */
  private openAccount(address: AccountAddress, observer: ApiObserver, concurrency: number): AccountService {
    const { metrics, logger } = this;
    const { settings: account } = address;
    const gate = createServiceGate({
      ratePerSecond: account.api.rateLimit,
      ...observeGate(metrics, logger, account.name),
    });
    metrics.apiPace.set({ account: account.name }, gate.pace() ?? 0);
    const service = { baseUrl: address.baseUrl, token: address.token, gate };
    const onRequest = observer.forAccount(account.name);
    const client = createAccountClient(account, service, onRequest);
    this.onStop(`api client (${account.name})`, () => client.close());
    // One connection per cycle in flight, shared with nothing else (see AccountLink.tradingClient).
    const tradingClient = createAccountClient(account, service, onRequest, { connections: concurrency });
    this.onStop(`trading api client (${account.name})`, () => tradingClient.close());
    // Tracking backs off and bounds its request rate itself; client retries would multiply that rate.
    const trackingClient = createAccountClient(account, service, onRequest, { maxAttempts: 1 });
    this.onStop(`tracking api client (${account.name})`, () => trackingClient.close());
    return { name: account.name, settings: account, client, tradingClient, trackingClient, pace: gate.pace };
  }

  private async close(): Promise<void> {
    // A stop during start waits for the opening to settle, so that nothing opened late is left behind.
    this.startAborted.abort();
    await this.opening?.catch(() => undefined);
    for (const { name, release } of this.releasers.reverse()) {
      try {
        await release();
      } catch (error) {
        this.logger.warn({ err: error, component: name }, 'component did not close cleanly');
      }
    }
    this.releasers.length = 0;
  }
}

/**
 * How every command opens the database: PostgreSQL when DATABASE_URL is set, otherwise the embedded database
 * under TREASURY_DATA_DIR. The schema is checked, never changed, on a server (`migrate` alone applies
 * migrations, as the owner role: README, Database roles); the embedded database is brought up to date.
 */
export function openDatabaseFromSettings(
  settings: Pick<Settings, 'database' | 'notifications'>,
  options: { maxConnections: number; clock?: () => Date; schema?: SchemaStep },
  wait?: OpenWait,
): Promise<{ database: Database; migration: MigrationResult }> {
  const { url, dataDir } = settings.database;
  const { schema = { step: 'check' }, ...open } = options;
  // Every command that writes a fact writes its notifications too (`pause` its kill_switch message).
  const routeNotifications = routerFor(settings.notifications);
  return openMigratedDatabase({ url, dataDir, ...open, routeNotifications }, wait, schema);
}

/** Where one account's service is, and the token that goes there and nowhere else. */
export interface AccountAddress {
  settings: AccountSettings;
  baseUrl: string;
  token: string;
}

/** One account's service as the worker reaches it: the engine's link, plus what tracking uses. */
export interface AccountService extends AccountLink {
  settings: AccountSettings;
  trackingClient: PurchaseClient;
  /** The pace its gate keeps, requests per second; undefined while it has none. */
  pace: () => number | undefined;
}

export interface ServiceAddresses {
  /** In the order of the settings. */
  accounts: readonly AccountAddress[];
  /** Set in demo mode: the sandbox this process started, and the warning to show whoever runs it. */
  demo?: { notice: string; close: () => Promise<void> };
}

/**
 * The purchase service of each account a command talks to: the configured ones, or, when no account names
 * one (demo mode), the built-in sandbox started in this process, serving every account with a ledger of its
 * own. The caller closes the sandbox when it is done.
 */
export async function openService(
  settings: Pick<Settings, 'accounts'>,
  options: { sandboxStepMs?: number } = {},
): Promise<ServiceAddresses> {
  if (!isDemo(settings)) {
    return {
      accounts: settings.accounts.map((account) => ({
        settings: account,
        baseUrl: account.api.url!,
        token: requireToken(account),
      })),
    };
  }
  // Loaded on demand: the simulator (and its web framework) is only needed in demo mode.
  const { startSandbox, demoTokenOf } = await import('./sandbox/index.js');
  const tokens = settings.accounts.map((account) => account.api.token ?? demoTokenOf(account.name));
  const sandbox = await startSandbox({
    stepMs: options.sandboxStepMs,
    accounts: settings.accounts.map((account, index) => ({ name: account.name, token: tokens[index]! })),
  });
  const notice = `DEMO MODE: no account names a service (TREASURY_API_URL is unset), using the built-in sandbox at ${sandbox.url} for ${settings.accounts.map((account) => account.name).join(', ')} (simulated prices, nothing real is bought)`;
  return {
    accounts: settings.accounts.map((account, index) => ({
      settings: account,
      baseUrl: sandbox.url,
      token: tokens[index]!,
    })),
    demo: { notice, close: () => sandbox.close() },
  };
}

/** What settlement tracking needs of each account: its tracking client and its webhook secret. */
function trackedAccounts(services: readonly AccountService[]): TrackedAccount[] {
  return services.map((service) => ({
    name: service.name,
    client: service.trackingClient,
    ...(service.settings.webhook.secret === undefined
      ? {}
      : { webhookSecret: service.settings.webhook.secret }),
  }));
}

/** The replica's cap on requests per second: the sum of its accounts' caps, none while one has none. */
function summedRateLimit(accounts: readonly AccountSettings[]): number | undefined {
  const limits = accounts.map((account) => account.api.rateLimit);
  return limits.every((limit) => limit !== undefined)
    ? limits.reduce((sum, limit) => sum + limit, 0)
    : undefined;
}

function summedPace(services: readonly AccountService[]): number | undefined {
  const paces = services.map((service) => service.pace());
  return paces.every((pace) => pace !== undefined) ? paces.reduce((sum, pace) => sum + pace, 0) : undefined;
}

/** What the logger scrubs from every line: the tokens, the webhook secrets, the channels' and the database's. */
export function secretsOf(settings: Settings): string[] {
  const secrets = [
    ...settings.accounts.flatMap((account) => [account.api.token, account.webhook.secret]),
    settings.console.oidc?.clientSecret,
    ...channelSecrets(settings.notifications),
  ];
  if (settings.database.url) {
    try {
      const password = new URL(settings.database.url).password;
      if (password) secrets.push(password, decodeURIComponent(password));
    } catch {
      // An unparseable URL was already refused by the settings schema.
    }
  }
  return secrets.filter((secret): secret is string => secret !== undefined);
}
