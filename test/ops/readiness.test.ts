import { cp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPurchaseClient, type PurchaseClient } from '../../src/api/index.js';
import { findMigrationsFolder, migrate } from '../../src/db/index.js';
import {
  type ApiObserver,
  createApiObserver,
  createReadiness,
  KillSwitch,
  type Readiness,
} from '../../src/engine/index.js';
import { createHttpServer, listen, type ReadinessReport } from '../../src/observability/http-server.js';
import { createLogger } from '../../src/observability/logger.js';
import { createMetrics, type Metrics } from '../../src/observability/metrics.js';
import { DEMO_TOKEN, type RunningSandbox, startSandbox } from '../../src/sandbox/index.js';
import { DEFAULT_ACCOUNT } from '../../src/strategy/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

const quiet = () =>
  createLogger({ level: 'silent', destination: new Writable({ write: (_c, _e, done) => done() }) });

async function readyz(baseUrl: string) {
  const response = await fetch(`${baseUrl}/readyz`);
  return { status: response.status, body: (await response.json()) as ReadinessReport };
}

/**
 * The worker's readiness checks over the test database and the client, by `clock`. serviceFreshMs 0: every
 * check asks the service, so its loss shows at the next check.
 */
function readinessOver(
  test: TestDatabase,
  client: PurchaseClient,
  { metrics, observer, clock }: { metrics: Metrics; observer: ApiObserver; clock: () => Date },
): Readiness {
  const killSwitch = new KillSwitch({ control: test.database.control, cacheMs: 0, clock, metrics });
  return createReadiness({
    database: test.database,
    accounts: new Map([[DEFAULT_ACCOUNT, { name: DEFAULT_ACCOUNT, client }]]),
    observer,
    killSwitch,
    clock,
    metrics,
    settings: { databaseTimeoutMs: 2_000, databaseClockSkewMs: 2_000 },
    serviceFreshMs: 0,
  });
}

/**
 * /readyz over real HTTP with the real checks: it answers the state the last periodic check left (never a
 * request of its own), names the failing check (service gone, database gone) and answers 503, while a pause is
 * only a label. Order matters: each step takes one more thing away.
 */
describe('/readyz', () => {
  let sandbox: RunningSandbox;
  let test: TestDatabase;
  let client: PurchaseClient;
  let readiness: Readiness;
  let http: ReturnType<typeof createHttpServer>;
  let baseUrl: string;
  let serviceRequests = 0;

  beforeAll(async () => {
    sandbox = await startSandbox({ stepMs: 0 });
    test = await createTestDatabase();
    const metrics = createMetrics({ defaultMetrics: false });
    const observer = createApiObserver(metrics);
    client = createPurchaseClient({
      baseUrl: sandbox.url,
      token: DEMO_TOKEN,
      retry: { maxAttempts: 1 },
      onRequest: (event) => {
        serviceRequests++;
        observer.forAccount(DEFAULT_ACCOUNT)(event);
      },
    });
    readiness = readinessOver(test, client, { metrics, observer, clock: () => new Date() });
    http = createHttpServer({ metrics, logger: quiet(), readiness: readiness.report });
    baseUrl = `http://127.0.0.1:${await listen(http, '127.0.0.1', 0)}`;
  });
  afterAll(async () => {
    await http?.close();
    await client?.close();
    await sandbox?.close();
    await test?.drop();
  });

  it('is not ready before the first check, and /healthz is', async () => {
    expect(await readyz(baseUrl)).toMatchObject({
      status: 503,
      body: { ready: false, checks: { database: { ok: false, detail: 'not checked yet' } } },
    });
    expect((await fetch(`${baseUrl}/healthz`)).status).toBe(200);
  });

  it('is ready with every check named, and paused is a label, not a failure', async () => {
    await readiness.refresh();
    expect(await readyz(baseUrl)).toEqual({
      status: 200,
      body: {
        ready: true,
        paused: false,
        checks: {
          database: { ok: true },
          migrations: { ok: true },
          service: { ok: true },
          clock: { ok: true },
        },
      },
    });
    await test.database.control.pause('drill', 'test');
    await readiness.refresh();
    expect(await readyz(baseUrl)).toMatchObject({ status: 200, body: { ready: true, paused: true } });
  });

  // The first release asked the service (a balance read) on every /readyz: anyone who could reach it could
  // make the worker spend the service's rate limit.
  it('answers from the last check: a hundred requests make no call to the service', async () => {
    const before = serviceRequests;
    const answers = await Promise.all(Array.from({ length: 100 }, () => readyz(baseUrl)));
    expect(answers.every((answer) => answer.status === 200)).toBe(true);
    expect(serviceRequests).toBe(before);
  });

  it('answers 503 naming the service when it stops answering', async () => {
    await sandbox.close();
    await readiness.refresh();
    const answer = await readyz(baseUrl);
    expect(answer.status).toBe(503);
    expect(answer.body.checks.service).toEqual({ ok: false, detail: 'API_UNAVAILABLE' });
    expect(answer.body.checks.database).toEqual({ ok: true });
  });

  it('answers 503 naming the database when it is gone, keeping the last known pause state', async () => {
    await test.database.close();
    await readiness.refresh();
    const answer = await readyz(baseUrl);
    expect(answer.status).toBe(503);
    expect(answer.body.checks.database?.ok).toBe(false);
    expect(answer.body.checks.database?.detail).toMatch(/^[A-Z_]+$/);
    expect(answer.body.paused).toBe(true);
  });
});

// The first release reported `migrated: () => true`, a check that could not fail.
describe('readiness with a database one migration behind', () => {
  it('is not ready, naming the migration it lacks; ready once it is applied', async () => {
    const test = await createTestDatabase(undefined, { empty: true });
    const folder = join(tmpdir(), `tb-migrations-${process.pid}-${Date.now()}`);
    try {
      await cp(findMigrationsFolder(), folder, { recursive: true });
      const journalFile = join(folder, 'meta', '_journal.json');
      const journal = JSON.parse(await readFile(journalFile, 'utf8')) as { entries: { tag: string }[] };
      const last = journal.entries.pop()!;
      await writeFile(journalFile, JSON.stringify(journal));
      await migrate(test.database, { folder });

      const metrics = createMetrics({ defaultMetrics: false });
      const observer = createApiObserver(metrics);
      const clock = () => new Date();
      const readiness = createReadiness({
        database: test.database,
        accounts: new Map([
          [
            DEFAULT_ACCOUNT,
            {
              name: DEFAULT_ACCOUNT,
              // Never called: the observer says the service answered just now.
              client: createPurchaseClient({ baseUrl: 'http://127.0.0.1:9', token: 'unused-token-000' }),
            },
          ],
        ]),
        observer,
        killSwitch: new KillSwitch({ control: test.database.control, cacheMs: 0, clock, metrics }),
        clock,
        metrics,
        settings: { databaseTimeoutMs: 2_000, databaseClockSkewMs: 2_000 },
      });
      observer.forAccount(DEFAULT_ACCOUNT)({
        operation: 'balance',
        method: 'GET',
        status: 200,
        durationMs: 1,
        attempt: 1,
      });
      await readiness.refresh();
      expect(readiness.report()).toMatchObject({
        ready: false,
        checks: { database: { ok: true }, migrations: { ok: false, detail: `not applied: ${last.tag}` } },
      });

      await migrate(test.database);
      await readiness.refresh();
      expect(readiness.report()).toMatchObject({ ready: true, checks: { migrations: { ok: true } } });
    } finally {
      await rm(folder, { recursive: true, force: true });
      await test.drop();
    }
  });
});

/**
 * A replica whose clock differs from the database's by more than engine.databaseClockSkewMs says so: in
 * /readyz (not ready, naming the difference) and in treasury_database_clock_skew_seconds.
 */
describe('/readyz with a clock off the database’s', () => {
  let sandbox: RunningSandbox;
  let test: TestDatabase;
  let client: PurchaseClient;

  beforeAll(async () => {
    sandbox = await startSandbox({ stepMs: 0 });
    test = await createTestDatabase();
    client = createPurchaseClient({ baseUrl: sandbox.url, token: DEMO_TOKEN, retry: { maxAttempts: 1 } });
  });
  afterAll(async () => {
    await client?.close();
    await sandbox?.close();
    await test?.drop();
  });

  async function checkWith(offsetMs: number) {
    const metrics = createMetrics({ defaultMetrics: false });
    const observer = createApiObserver(metrics);
    const readiness = readinessOver(test, client, {
      metrics,
      observer,
      clock: () => new Date(Date.now() + offsetMs),
    });
    await readiness.refresh();
    const skew = (await metrics.registry.getSingleMetric('treasury_database_clock_skew_seconds')?.get())
      ?.values[0]?.value;
    return { report: readiness.report(), skew };
  }

  it('is not ready 60 s behind, naming the difference, and the metric shows it', async () => {
    const { report, skew } = await checkWith(-60_000);
    expect(report.ready).toBe(false);
    expect(report.checks.clock).toMatchObject({ ok: false });
    expect(report.checks.clock?.detail).toMatch(/behind the database's by 60\.\d s/);
    expect(skew).toBeLessThan(-59);
    expect(skew).toBeGreaterThan(-61);
  });

  it('is ready within the setting', async () => {
    const { report, skew } = await checkWith(0);
    expect(report).toMatchObject({ ready: true, checks: { clock: { ok: true } } });
    expect(Math.abs(skew ?? Number.NaN)).toBeLessThan(2);
  });
});
