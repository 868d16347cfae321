/**
 * The tracking test bench: a real sandbox over HTTP (stepMs 0: orders move only when a test steps them),
 * a real test database, the real client, metrics on their own registry, and a logger whose every line is
 * captured. Nothing of ours is mocked.
 */
import type { FastifyInstance } from 'fastify';
import { createPurchaseClient, type PurchaseClient, type RequestEvent } from '../../../src/api/index.js';
import { engineSchema, type TrackingSettings, trackingSettingsSchema } from '../../../src/config/index.js';
import type { Database, OrderRecord } from '../../../src/db/index.js';
import { Decimal } from '../../../src/money.js';
import { createReceiverServer, listen } from '../../../src/observability/http-server.js';
import { createLogger, type Logger } from '../../../src/observability/logger.js';
import { createMetrics, type Metrics } from '../../../src/observability/metrics.js';
import {
  DEMO_TOKEN,
  type RunningSandbox,
  type SandboxOptions,
  startSandbox,
} from '../../../src/sandbox/index.js';
import { DEFAULT_ACCOUNT } from '../../../src/strategy/index.js';
import { createTracker, createWebhookReceiver, type WebhookReceiver } from '../../../src/tracking/index.js';
import { createTestDatabase, type TestBackend, type TestDatabase } from '../../support/database.js';

export const SECRET = 'whsec-Zq8v1TtY3mKp0rLx';

export interface Bench {
  /** The account of `client`: the sandbox's first (`default` unless the sandbox is given `accounts`). */
  account: string;
  sandbox: RunningSandbox;
  test: TestDatabase;
  database: Database;
  client: PurchaseClient;
  /** A client of each account of the sandbox, with that account's token, by account name. */
  clients: ReadonlyMap<string, PurchaseClient>;
  metrics: Metrics;
  /** What engine.databaseTimeoutMs gives tracking in the worker (its default). */
  databaseTimeoutMs: number;
  logger: Logger;
  /** Every log line written so far (JSON text). */
  lines: string[];
  /** Every request the client sent. */
  requests: RequestEvent[];
  /** The test clock: real time unless a test moves it (`clock.set`, `clock.advance`). */
  clock: FakeableClock;
  settings(overrides?: Record<string, unknown>): TrackingSettings;
  /** Quotes and buys at the account's service (default `account`), and records the order as ours. */
  placeOrder(options?: {
    record?: boolean;
    account?: string;
  }): Promise<{ serviceOrderId: string; order: OrderRecord | null }>;
  close(): Promise<void>;
}

export interface FakeableClock {
  (): Date;
  set(at: Date): void;
  advance(ms: number): void;
}

export function createClock(): FakeableClock {
  let fixed: number | undefined;
  const clock = (() => new Date(fixed ?? Date.now())) as FakeableClock;
  clock.set = (at) => {
    fixed = at.getTime();
  };
  clock.advance = (ms) => {
    fixed = (fixed ?? Date.now()) + ms;
  };
  return clock;
}

export async function startBench(sandboxOptions: SandboxOptions = {}, backend?: TestBackend): Promise<Bench> {
  const clock = createClock();
  const sandbox = await startSandbox({ stepMs: 0, webhookRetryDelaysMs: [5, 5], ...sandboxOptions });
  const test = await createTestDatabase(backend, { clock });
  const requests: RequestEvent[] = [];
  const accounts = sandboxOptions.accounts ?? [{ name: DEFAULT_ACCOUNT, token: DEMO_TOKEN }];
  const clients = new Map(
    accounts.map(({ name, token }) => [
      name,
      createPurchaseClient({
        baseUrl: sandbox.url,
        token,
        account: name,
        retry: { maxAttempts: 1 },
        onRequest: (event) => requests.push(event),
      }),
    ]),
  );
  const account = accounts[0]!.name;
  const client = clients.get(account)!;
  const lines: string[] = [];
  // No `secrets` on purpose: the logger would scrub them, and these tests must see any leak.
  const logger = createLogger({
    level: 'debug',
    pretty: false,
    destination: { write: (line) => lines.push(line) },
  });
  return {
    account,
    sandbox,
    test,
    database: test.database,
    client,
    clients,
    metrics: createMetrics({ defaultMetrics: false }),
    databaseTimeoutMs: engineSchema.parse({}).databaseTimeoutMs,
    logger,
    lines,
    requests,
    clock,
    settings: (overrides = {}) => trackingSettingsSchema.parse(overrides),
    async placeOrder({ record = true, account: at = account } = {}) {
      const service = clients.get(at)!;
      const quote = await service.getQuote({ symbol: 'USDTBRL', amount: new Decimal('1000') });
      const placed = await service.createOrder({ quoteId: quote.quoteId });
      const order = record ? await test.database.orders.recordExternal({ ...placed, account: at }) : null;
      return { serviceOrderId: placed.id, order };
    },
    async close() {
      await Promise.all([...clients.values()].map((each) => each.close()));
      await sandbox.close();
      await test.drop();
    },
  };
}

/** The webhook receiver's own listener on port 0 with whatever `register` adds, as app.ts builds it. */
export async function startHttp(
  register: (app: FastifyInstance) => void,
): Promise<{ app: FastifyInstance; url: string }> {
  const app = createReceiverServer();
  register(app);
  const port = await listen(app, '127.0.0.1', 0);
  return { app, url: `http://127.0.0.1:${port}` };
}

export interface ReceiverListener {
  receiver: WebhookReceiver;
  url: string;
  close(): Promise<void>;
}

/** The webhook receiver over `bench` on a listener of its own: tracking by webhooks alone (polling off). */
export async function startReceiver(
  bench: Bench,
  settingsOverrides: Record<string, unknown> = {},
): Promise<ReceiverListener> {
  const settings = bench.settings({ poll: { enabled: false }, ...settingsOverrides });
  const tracker = createTracker({ ...bench, settings });
  const receiver = createWebhookReceiver({
    ...bench,
    accounts: [{ name: bench.account, secret: SECRET, tracker }],
    settings,
  });
  const http = await startHttp((app) => receiver.register(app));
  return {
    receiver,
    url: http.url,
    close: async () => {
      await http.app.close();
      await receiver.stop();
    },
  };
}

/** Log lines parsed, optionally only those with the given message. */
export function logged(lines: readonly string[], msg?: string): Record<string, unknown>[] {
  const all = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  return msg === undefined ? all : all.filter((line) => line.msg === msg);
}

/** The stored payloads of the webhook events about one order, as kept for review (nothing else reads them). */
export async function storedPayloads(database: Database, serviceOrderId: string): Promise<unknown[]> {
  const rows = await database.withReservedConnection((connection) =>
    connection.query('select payload from webhook_events where service_order_id = $1 order by id', [
      serviceOrderId,
    ]),
  );
  return rows.map((row) => row.payload);
}
