/**
 * The engine test bench: a real sandbox over HTTP, a real test database, the real client (its observer
 * hook records every request and can act on it, e.g. move the sandbox's clock), metrics on their own
 * registry, and a logger whose every line is captured. Nothing of ours is mocked.
 */
import { Writable } from 'node:stream';
import {
  createPurchaseClient,
  createServiceGate,
  type PurchaseClient,
  type RequestEvent,
  type ServiceGate,
  type ServiceGateOptions,
} from '../../../src/api/index.js';
import { type EngineSettings, engineSchema } from '../../../src/config/index.js';
import type { CycleTrigger, Database } from '../../../src/db/index.js';
import {
  type AccountContext,
  type CycleReport,
  createApiObserver,
  type EngineContext,
  inAccount,
  KillSwitch,
  observeGate,
  recordStrategiesSeen,
  runCycle,
} from '../../../src/engine/index.js';
import { Decimal } from '../../../src/money.js';
import { createLogger } from '../../../src/observability/logger.js';
import { createMetrics, type Metrics } from '../../../src/observability/metrics.js';
import {
  DEMO_TOKEN,
  type RunningSandbox,
  type SandboxOptions,
  startSandbox,
} from '../../../src/sandbox/index.js';
import {
  accountOf,
  type DcaStrategy,
  DEFAULT_ACCOUNT,
  DEFAULT_QUOTE_TOLERANCES,
  type Strategy,
} from '../../../src/strategy/index.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';

export interface LogLine {
  level: string;
  msg: string;
  [key: string]: unknown;
}

export interface EngineBench {
  sandbox: RunningSandbox;
  test: TestDatabase;
  database: Database;
  /** The first account's client (the only one's, without `accounts`). */
  client: PurchaseClient;
  /** Every account's client, by name. */
  clients: Map<string, PurchaseClient>;
  /** The token the sandbox gave each account. */
  tokens: Map<string, string>;
  metrics: Metrics;
  /** The client's gate, when the options asked for one. */
  gate: ServiceGate | undefined;
  context: EngineContext;
  /** The context of one account (default: the first). */
  inAccount(name?: string): AccountContext;
  lines: LogLine[];
  requests: RequestEvent[];
  /** Called after every client request, before the caller sees the answer. */
  onRequest: ((event: RequestEvent) => void) | undefined;
  /** Records the strategy (as the worker does at load) and runs one cycle of it. */
  run(strategy: Strategy, slot?: Date, trigger?: CycleTrigger): Promise<CycleReport>;
  /** Milliseconds added to the sandbox's clock (to expire quotes without waiting). */
  sandboxClockOffsetMs: number;
  close(): Promise<void>;
}

export interface BenchOptions {
  engine?: Record<string, unknown>;
  sandbox?: SandboxOptions;
  dryRun?: boolean;
  clock?: () => Date;
  replicaId?: string;
  /** Reuse a database (a second replica on the same one). */
  test?: TestDatabase;
  /**
   * Several accounts at the sandbox, each with its own token (`token-NAME`), ledger and credit line, and a
   * client of its own; default one account, `default`, with the demo token.
   */
  accounts?: readonly string[];
  /**
   * A gate for the client (its pace and a 429's pause), observed as the worker's is; without it requests
   * leave at once and a 429 pauses nothing.
   */
  gate?: Omit<ServiceGateOptions, 'onPause' | 'onPace'>;
}

export function engineSettings(overrides: Record<string, unknown> = {}): EngineSettings {
  return engineSchema.parse(overrides);
}

export async function startEngineBench(options: BenchOptions = {}): Promise<EngineBench> {
  const bench = {} as EngineBench;
  bench.sandboxClockOffsetMs = 0;
  const names = options.accounts ?? [DEFAULT_ACCOUNT];
  bench.tokens = new Map(
    names.map((name) => [name, options.accounts === undefined ? DEMO_TOKEN : `token-${name}`]),
  );
  bench.sandbox = await startSandbox({
    stepMs: 0,
    now: () => Date.now() + bench.sandboxClockOffsetMs,
    ...(options.accounts === undefined
      ? {}
      : { accounts: names.map((name) => ({ name, token: bench.tokens.get(name)! })) }),
    ...options.sandbox,
  });
  // One clock for the engine and the rows it writes (submitted_at decides a cycle's budget period).
  bench.test = options.test ?? (await createTestDatabase(undefined, { clock: options.clock }));
  bench.database = bench.test.database;
  bench.lines = [];
  bench.requests = [];
  bench.metrics = createMetrics({ defaultMetrics: false });
  const logger = createLogger({
    level: 'debug',
    secrets: [...bench.tokens.values()],
    destination: new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n')) if (line) bench.lines.push(JSON.parse(line) as LogLine);
        done();
      },
    }),
  });
  const observer = createApiObserver(bench.metrics);
  bench.gate =
    options.gate && createServiceGate({ ...options.gate, ...observeGate(bench.metrics, logger, names[0]!) });
  bench.clients = new Map(
    names.map((name) => {
      const onRequest = observer.forAccount(name);
      const client = createPurchaseClient({
        baseUrl: bench.sandbox.url,
        token: bench.tokens.get(name)!,
        account: name,
        retry: { baseDelayMs: 5, maxDelayMs: 20 },
        ...(bench.gate && name === names[0] ? { gate: bench.gate } : {}),
        onRequest: (event) => {
          onRequest(event);
          bench.requests.push(event);
          bench.onRequest?.(event);
        },
      });
      return [name, client];
    }),
  );
  bench.client = bench.clients.get(names[0]!)!;
  const clock = options.clock ?? (() => new Date());
  bench.context = {
    database: bench.database,
    accounts: new Map([...bench.clients].map(([name, client]) => [name, { name, client }])),
    metrics: bench.metrics,
    logger,
    settings: engineSettings(options.engine),
    dryRun: options.dryRun ?? false,
    replicaId: options.replicaId ?? 'test-replica',
    cyclesInFlight: new Set(),
    clock,
    apiPace: () => bench.gate?.pace(),
    killSwitch: new KillSwitch({
      control: bench.database.control,
      cacheMs: 1_000,
      clock,
      metrics: bench.metrics,
    }),
    tolerances: DEFAULT_QUOTE_TOLERANCES,
  };
  bench.inAccount = (name = names[0]!) => inAccount(bench.context, name);
  bench.run = async (strategy, slot = freshSlot(), trigger = 'once') => {
    await recordStrategiesSeen(bench.context, [strategy]);
    return runCycle(bench.inAccount(accountOf(strategy)), { strategy, slot, trigger });
  };
  bench.close = async () => {
    await Promise.all([...bench.clients.values()].map((client) => client.close()));
    await bench.sandbox.close();
    if (!options.test) await bench.test.drop();
  };
  return bench;
}

export const d = (text: string) => new Decimal(text);

/** A plain DCA strategy in UTC, every second, changed only where a test says so. */
export function strategy(overrides: Partial<DcaStrategy> = {}): DcaStrategy {
  return {
    kind: 'dca',
    name: 'engine-test',
    symbol: 'USDTBRL',
    amount: d('100.00'),
    schedule: '* * * * * *',
    timezone: 'UTC',
    missed: 'skip',
    missedGraceMs: 600_000,
    enabled: true,
    dryRun: false,
    source: { file: 'test.yaml', line: 1 },
    ...overrides,
  };
}

/**
 * The context of the one account `default` reached through `client` (a stand-in service, a relay, other
 * credentials) instead of the bench's, and through `tradingClient` for quotes and orders when given; also
 * the EngineContext whose only account that is.
 */
export function onClient(
  context: EngineContext,
  client: PurchaseClient,
  tradingClient?: PurchaseClient,
): AccountContext {
  const account = { name: DEFAULT_ACCOUNT, client, tradingClient };
  return { ...context, accounts: new Map([[DEFAULT_ACCOUNT, account]]), account };
}

/** Another replica over `database` (on PostgreSQL a pool of its own), with the bench's service, clock and metrics. */
export function replicaOn(bench: EngineBench, database: Database, replicaId = 'replica-b'): EngineContext {
  return {
    ...bench.context,
    database,
    replicaId,
    killSwitch: new KillSwitch({
      control: database.control,
      cacheMs: 1_000,
      clock: bench.context.clock,
      metrics: bench.metrics,
    }),
  };
}

/** Distinct slots for tests that run one cycle each. */
let nextSlot = Date.UTC(2030, 0, 1, 10, 0, 0);
export function freshSlot(): Date {
  nextSlot += 1_000;
  return new Date(nextSlot);
}

/** The current value of a counter or gauge series with these labels (0 when never set). */
export async function metricValue(
  metrics: Metrics,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const metric = metrics.registry.getSingleMetric(name);
  if (!metric) throw new Error(`no metric ${name}`);
  const { values } = await metric.get();
  const match = values.find((value) =>
    Object.entries(labels).every(([key, expected]) => String(value.labels[key]) === expected),
  );
  return match?.value ?? 0;
}
