import { mkdtemp, writeFile } from 'node:fs/promises';
import { get as httpGet } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { App } from '../../src/app.js';
import { DEMO_TOKEN, type RunningSandbox, startSandbox } from '../../src/sandbox/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

/**
 * Every route of the ops listener of `run`, as fastify lists them (not a list kept here), asked without
 * credentials: each answers 401 or sends the browser to the login form, but for the few that are public by
 * design. A route added later without its access declared fails this walk, or fails to register at all.
 */
const PUBLIC = [
  'GET /healthz',
  'GET /readyz',
  // Prometheus scrapes without a login; the listener's address keeps it private (README, "Security").
  'GET /metrics',
  'GET /login',
  'POST /login',
  // The second factor's form: without the cookie of a half-done login it sends the browser back to /login.
  'GET /login/code',
  'POST /login/code',
  'GET /assets/console.css',
  'GET /assets/htmx.min.js',
  // The REST API's document and its reference page: what the API is, never what the treasury holds.
  'GET /api/v1/openapi.json',
  'GET /api/v1/docs',
];

/** A GET with a Host header of the test's choosing (fetch sets its own). */
function getWithHost(url: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = httpGet(url, { headers: { host } }, (response) => {
      let body = '';
      response.setEncoding('utf8').on('data', (chunk: string) => {
        body += chunk;
      });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    });
    request.on('error', reject);
  });
}

const keyOf = (route: { method: string; url: string }) => `${route.method} ${route.url}`;

describe('the routes of the ops listener', () => {
  let sandbox: RunningSandbox;
  let test: TestDatabase;
  let app: App;
  let base: string;
  let host: string;

  beforeAll(async () => {
    sandbox = await startSandbox({ stepMs: 0 });
    test = await createTestDatabase();
    const folder = await mkdtemp(join(tmpdir(), 'tb-walk-'));
    await writeFile(join(folder, 'settings.yaml'), 'log:\n  level: warn\n');
    await writeFile(
      join(folder, 'strategies.yaml'),
      'name: walk\nkind: dca\nsymbol: USDTBRL\namount: "100.00"\nschedule: "0 0 1 1 *"\nenabled: false\n',
    );
    app = new App({
      mode: 'run',
      env: {
        TREASURY_API_URL: sandbox.url,
        TREASURY_API_TOKEN: DEMO_TOKEN,
        ...(test.url ? { DATABASE_URL: test.url } : { TREASURY_DATA_DIR: join(folder, 'data') }),
        TREASURY_CONFIG: join(folder, 'settings.yaml'),
        TREASURY_STRATEGIES: join(folder, 'strategies.yaml'),
        TREASURY_OPS_ADDR: '127.0.0.1:0',
        TREASURY_WEBHOOK_ADDR: '127.0.0.1:0',
        TREASURY_WEBHOOK_SECRET: 'a-webhook-secret-of-some-length',
        TREASURY_CONSOLE_URL: 'https://Treasury.Example.com',
      },
      logDestination: new Writable({ write: (_c, _e, done) => done() }),
    });
    await app.start();
    host = `127.0.0.1:${app.ports.ops}`;
    base = `http://${host}`;
  }, 60_000);

  afterAll(async () => {
    await app?.stop();
    await sandbox?.close();
    await test?.drop();
  });

  it('answers 401 or a redirect to /login to a request without credentials, on every route but the public ones', async () => {
    const routes = app.opsRoutes.filter((route) => route.method !== 'HEAD' && route.method !== 'OPTIONS');
    // The walk is only as good as the list: the console's pages and the reports must be in it.
    expect(routes.map(keyOf)).toEqual(
      expect.arrayContaining([
        'GET /',
        'GET /orders.csv',
        'GET /api/reports/orders',
        'POST /users',
        'GET /api/v1/cycles/:id',
        'POST /api/v1/kill-switch/pause',
      ]),
    );
    const answers: string[] = [];
    for (const route of routes) {
      if (PUBLIC.includes(keyOf(route))) continue;
      const path = route.url.replace(/:[A-Za-z]+/g, '1').replace(/\*/g, 'x');
      const query = path.startsWith('/api/reports/') ? '?from=2026-01-01&to=2026-02-01' : '';
      const response = await fetch(`${base}${path}${query}`, {
        method: route.method,
        redirect: 'manual',
        ...(route.method === 'GET'
          ? {}
          : { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'x=1' }),
      });
      await response.arrayBuffer();
      const location = response.headers.get('location');
      const refused = response.status === 401 || (response.status === 303 && location === '/login');
      if (!refused) answers.push(`${keyOf(route)} answered ${response.status} ${location ?? ''}`.trim());
    }
    expect(answers).toEqual([]);
  });

  it('declares its access on every route, and only the listed ones are public', () => {
    const routes = app.opsRoutes.filter((route) => route.method !== 'HEAD');
    expect(routes.filter((route) => route.requires === undefined).map(keyOf)).toEqual([]);
    expect(
      routes
        .filter((route) => route.requires === 'public')
        .map(keyOf)
        .sort(),
    ).toEqual([...PUBLIC].sort());
  });

  it('refuses a Host it does not serve before anything else, so a rebound DNS name reads nothing', async () => {
    const foreign = await getWithHost(`${base}/login`, `attacker.example:${app.ports.ops}`);
    expect(foreign.status).toBe(421);
    expect(foreign.body).toContain('TREASURY_CONSOLE_URL');
    expect((await getWithHost(`${base}/api/reports/summary`, 'attacker.example')).status).toBe(421);
    expect((await getWithHost(`${base}/api/v1/status`, 'attacker.example')).status).toBe(421);
    // The address people open behind a proxy, as the proxy passes it on.
    for (const name of [host, `localhost:${app.ports.ops}`, 'treasury.example.com']) {
      expect((await getWithHost(`${base}/login`, name)).status, name).toBe(200);
    }
    // Probes and scrapers reach the listener by whatever name the network gives it.
    expect((await getWithHost(`${base}/healthz`, 'worker:9464')).status).toBe(200);
  });
});
