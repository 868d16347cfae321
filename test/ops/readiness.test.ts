import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPurchaseClient, type PurchaseClient } from '../../src/api/index.js';
import { createApiObserver, createReadiness, KillSwitch } from '../../src/engine/index.js';
import { createHttpServer, listen, type ReadinessReport } from '../../src/observability/http-server.js';
import { createLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { DEMO_TOKEN, type RunningSandbox, startSandbox } from '../../src/sandbox/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

const quiet = () =>
  createLogger({ level: 'silent', destination: new Writable({ write: (_c, _e, done) => done() }) });

async function readyz(baseUrl: string) {
  const response = await fetch(`${baseUrl}/readyz`);
  return { status: response.status, body: (await response.json()) as ReadinessReport };
}

/**
 * /readyz over real HTTP with the real checks: it names the failing one (service gone, database gone) and
 * answers 503, while a pause is only a label. Order matters: each step takes one more thing away.
 */
describe('/readyz', () => {
  let sandbox: RunningSandbox;
  let test: TestDatabase;
  let client: PurchaseClient;
  let http: ReturnType<typeof createHttpServer>;
  let baseUrl: string;

  beforeAll(async () => {
    sandbox = await startSandbox({ stepMs: 0 });
    test = await createTestDatabase();
    const metrics = createMetrics({ defaultMetrics: false });
    const observer = createApiObserver(metrics);
    client = createPurchaseClient({
      baseUrl: sandbox.url,
      token: DEMO_TOKEN,
      retry: { maxAttempts: 1 },
      onRequest: observer.onRequest,
    });
    const clock = () => new Date();
    const killSwitch = new KillSwitch({ control: test.database.control, cacheMs: 0, clock, metrics });
    http = createHttpServer({
      port: 0,
      metrics,
      logger: quiet(),
      // serviceFreshMs 0: every probe asks the service, so its loss shows at once.
      readiness: createReadiness({
        database: test.database,
        client,
        observer,
        killSwitch,
        clock,
        metrics,
        settings: { databaseTimeoutMs: 2_000 },
        migrated: () => true,
        serviceFreshMs: 0,
      }),
    });
    baseUrl = `http://127.0.0.1:${await listen(http, '127.0.0.1', 0)}`;
  });
  afterAll(async () => {
    await http?.close();
    await client?.close();
    await sandbox?.close();
    await test?.drop();
  });

  it('is ready with every check named, and paused is a label, not a failure', async () => {
    expect(await readyz(baseUrl)).toEqual({
      status: 200,
      body: {
        ready: true,
        paused: false,
        checks: { database: { ok: true }, migrations: { ok: true }, service: { ok: true } },
      },
    });
    await test.database.control.pause('drill', 'test');
    expect(await readyz(baseUrl)).toMatchObject({ status: 200, body: { ready: true, paused: true } });
  });

  it('answers 503 naming the service when it stops answering', async () => {
    await sandbox.close();
    const answer = await readyz(baseUrl);
    expect(answer.status).toBe(503);
    expect(answer.body.checks.service).toEqual({ ok: false, detail: 'API_UNAVAILABLE' });
    expect(answer.body.checks.database).toEqual({ ok: true });
  });

  it('answers 503 naming the database when it is gone, keeping the last known pause state', async () => {
    await test.database.close();
    const answer = await readyz(baseUrl);
    expect(answer.status).toBe(503);
    expect(answer.body.checks.database?.ok).toBe(false);
    expect(answer.body.checks.database?.detail).toMatch(/^[A-Z_]+$/);
    expect(answer.body.paused).toBe(true);
  });

  it('answers 503 when the check itself throws, and /healthz stays 200', async () => {
    const broken = createHttpServer({
      port: 0,
      metrics: createMetrics({ defaultMetrics: false }),
      logger: quiet(),
      readiness: async () => {
        throw new Error('boom');
      },
    });
    const url = `http://127.0.0.1:${await listen(broken, '127.0.0.1', 0)}`;
    try {
      expect(await readyz(url)).toEqual({
        status: 503,
        body: { ready: false, paused: false, checks: { readiness: { ok: false, detail: 'check failed' } } },
      });
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
    } finally {
      await broken.close();
    }
  });
});
