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
  type CycleReport,
  createApiObserver,
  type EngineContext,
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
import { type DcaStrategy, DEFAULT_QUOTE_TOLERANCES, type Strategy } from '../../../src/strategy/index.js';
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
  client: PurchaseClient;
  metrics: Metrics;
  /** The client's gate, when the options asked for one. */
  gate: ServiceGate | undefined;
  context: EngineContext;
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
  bench.sandbox = await startSandbox({
    stepMs: 0,
    now: () => Date.now() + bench.sandboxClockOffsetMs,
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
    secrets: [DEMO_TOKEN],
    destination: new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n')) if (line) bench.lines.push(JSON.parse(line) as LogLine);
        done();
      },
    }),
  });
  const observer = createApiObserver(bench.metrics);
  bench.gate = options.gate && createServiceGate({ ...options.gate, ...observeGate(bench.metrics, logger) });
  bench.client = createPurchaseClient({
    baseUrl: bench.sandbox.url,
    token: DEMO_TOKEN,
    retry: { baseDelayMs: 5, maxDelayMs: 20 },
    ...(bench.gate ? { gate: bench.gate } : {}),
    onRequest: (event) => {
      observer.onRequest(event);
      bench.requests.push(event);
      bench.onRequest?.(event);
    },
  });
  const clock = options.clock ?? (() => new Date());
  bench.context = {
    database: bench.database,
    client: bench.client,
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
  bench.run = async (strategy, slot = freshSlot(), trigger = 'once') => {
    await recordStrategiesSeen(bench.context, [strategy]);
    return runCycle(bench.context, { strategy, slot, trigger });
  };
  bench.close = async () => {
    await bench.client.close();
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
