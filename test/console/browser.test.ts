import { readFile } from 'node:fs/promises';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPurchaseClient, type PurchaseClient } from '../../src/api/index.js';
import { hashPassword } from '../../src/console/passwords.js';
import { registerConsole } from '../../src/console/server.js';
import { type Database, EVERY_ACCOUNT, openConsoleStore, openMigratedDatabase } from '../../src/db/index.js';
import { Decimal } from '../../src/money.js';
import { createReceiverServer, listen } from '../../src/observability/http-server.js';
import { createLogger } from '../../src/observability/logger.js';
import { DEMO_TOKEN, type RunningSandbox, startSandbox } from '../../src/sandbox/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { runCommand, writeWorkerFiles } from '../support/worker-process.js';
import { chromiumFor, LAUNCH_ARGS } from './chromium.js';

const CHROMIUM = chromiumFor('browser.test.ts');
const PASSWORD = 'correct horse battery staple';
const NAME = 'browser-dca';
const INJECTED = '<img src=x onerror="window.injected=1">evil';
const STRATEGIES = `name: ${NAME}
kind: dca
symbol: USDTBRL
amount: "250.00"
schedule: "0 10 * * *"
timezone: UTC
maxPrice: "9.00"
budget:
  perDay: "1000.00"
  perMonth: "20000.00"
`;

/**
 * The console in the system's Chromium, the way a person uses it: after a sandbox run (`treasury-bot once`),
 * log in, read the overview, open a cycle's decision trace, see that a viewer has no buttons and that the
 * server refuses the viewer's forged request, lose the CSRF token (403), see markup rendered as text, adopt
 * an unsure cycle's order, download the orders as CSV, log out. No page may break its own content security
 * policy (htmx included).
 */
describe.skipIf(!CHROMIUM)('web console in Chromium', { timeout: 90_000 }, () => {
  let sandbox: RunningSandbox;
  let client: PurchaseClient;
  let test: TestDatabase | undefined;
  let database: Database;
  let server: FastifyInstance;
  let url: string;
  let browser: Browser;
  let cycleId: number;
  const policyErrors: string[] = [];

  async function newPage(): Promise<Page> {
    const context = await browser.newContext();
    const page = await context.newPage();
    page.on('console', (message) => {
      if (message.type() === 'error') policyErrors.push(message.text());
    });
    return page;
  }

  async function logIn(page: Page, name: string) {
    await page.goto(`${url}/`);
    await page.fill('input[name=name]', name);
    await page.fill('input[name=password]', PASSWORD);
    await page.click('button[type=submit]');
    await page.waitForURL(`${url}/`);
  }

  beforeAll(async () => {
    sandbox = await startSandbox({ stepMs: 0 });
    const env: Record<string, string> = {
      ...(await writeWorkerFiles(STRATEGIES, 'engine:\n  reload:\n    watch: false\n')),
      TREASURY_API_URL: sandbox.url,
      TREASURY_API_TOKEN: DEMO_TOKEN,
    };
    test = await createTestDatabase();
    if (test.url) Object.assign(env, { DATABASE_URL: test.url });
    else await test.drop();
    const run = await runCommand(['once', '--json'], env);
    expect(run.code, run.stderr).toBe(0);
    database = test.url
      ? test.database
      : (await openMigratedDatabase({ dataDir: env.TREASURY_DATA_DIR })).database;
    const [cycle] = await database.cycles.listRecent(EVERY_ACCOUNT, { limit: 1 });
    cycleId = cycle!.id;
    await database.strategies.upsertSeen([
      { name: INJECTED, kind: 'dca', account: 'default', config: { name: INJECTED }, hash: 'h' },
    ]);
    await database.strategies.halt(INJECTED, `halted because ${INJECTED}`);

    const store = openConsoleStore(database);
    const passwordHash = await hashPassword(PASSWORD, { N: 2 ** 10, r: 8, p: 1 });
    await store.people.add({ name: 'alice', role: 'admin', passwordHash }, 'test');
    await store.people.add({ name: 'victor', role: 'viewer', passwordHash }, 'test');
    await store.people.add({ name: 'olga', role: 'operator', passwordHash }, 'test');
    client = createPurchaseClient({ baseUrl: sandbox.url, token: DEMO_TOKEN });
    server = createReceiverServer();
    const logger = createLogger({
      level: 'silent',
      destination: new Writable({ write: (_c, _e, done) => done() }),
    });
    registerConsole(server, {
      database,
      store,
      clock: () => new Date(),
      logger,
      accounts: new Map([['default', { name: 'default', client }]]),
    });
    url = `http://127.0.0.1:${await listen(server, '127.0.0.1', 0)}`;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await client?.close();
    await sandbox?.close();
    if (test?.url) await test.drop();
    else await database?.close();
  });

  it('logs in and shows the overview after a sandbox run', async () => {
    const page = await newPage();
    await logIn(page, 'alice');
    await expect(page.locator('h1').textContent()).resolves.toBe('Overview');
    const spend = page.locator('tr', { hasText: NAME });
    await expect(spend.locator('td').nth(2).textContent()).resolves.toMatch(/^2\d\d\.\d\d$/);
    await expect(page.locator('.card', { hasText: 'placed' }).locator('b').textContent()).resolves.toBe('1');
    await expect(page.locator('button', { hasText: 'Pause all' }).count()).resolves.toBe(1);
    // htmx replaces the live part in place, and the fresh part keeps refreshing: wait for two refreshes.
    for (let refresh = 0; refresh < 2; refresh++) {
      await page.waitForResponse((response) => response.url().endsWith('/live') && response.status() === 200);
    }
    await expect(page.locator('#live').count()).resolves.toBe(1);
  });

  it("opens a cycle's decision trace from the strategies page", async () => {
    const page = await newPage();
    await logIn(page, 'alice');
    await page.click('a[href="/strategies"]');
    await page.click(`tr#${NAME} a[href="/cycles/${cycleId}"]`);
    await expect(page.locator('h1').textContent()).resolves.toBe(`Cycle ${cycleId}`);
    const maxPrice = page.locator('tr', { hasText: 'max_price' });
    await expect(maxPrice.textContent()).resolves.toContain('pass');
    await expect(page.locator('main').textContent()).resolves.toContain('budget_day');
    await expect(page.locator('main p', { hasText: 'Order' }).first().textContent()).resolves.toMatch(
      /250\.00 USDTBRL/,
    );
  });

  it('follows a notification link to the cycle of an order', async () => {
    const page = await newPage();
    await logIn(page, 'alice');
    const order = await database.orders.forCycle(cycleId);
    await page.goto(`${url}/orders/${order!.serviceOrderId}`);
    await expect(page.locator('h1').textContent()).resolves.toBe(`Cycle ${cycleId}`);
  });

  it('shows a viewer no buttons, and the server refuses the viewer’s forged request', async () => {
    const page = await newPage();
    await logIn(page, 'victor');
    await expect(page.locator('main form[method=post] button').count()).resolves.toBe(0);
    await page.goto(`${url}/attention`);
    await expect(page.locator('main form[method=post] button').count()).resolves.toBe(0);
    const csrf = await page.locator('input[name=_csrf]').first().getAttribute('value');
    const forged = await page.request.post(`${url}/kill-switch/pause`, { form: { _csrf: csrf ?? '' } });
    expect(forged.status()).toBe(403);
    expect((await database.control.get()).paused).toBe(false);
    await page.goto(`${url}/audit`);
    await expect(page.locator('h1').textContent()).resolves.toBe('Refused');
  });

  it('answers 403 to a form whose CSRF token is gone', async () => {
    const page = await newPage();
    await logIn(page, 'alice');
    const form = page.locator('form[action="/kill-switch/pause"]');
    await form.locator('input[name=_csrf]').evaluate((input) => input.remove());
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith('/kill-switch/pause')),
      form.locator('button').click(),
    ]);
    expect(response.status()).toBe(403);
    await expect(page.locator('main').textContent()).resolves.toContain('CSRF');
    expect((await database.control.get()).paused).toBe(false);
  });

  it('renders an injected strategy name and reason as text, not markup', async () => {
    const page = await newPage();
    await logIn(page, 'alice');
    await page.goto(`${url}/attention`);
    await expect(page.locator('main').textContent()).resolves.toContain(`halted because ${INJECTED}`);
    await expect(page.locator('main img').count()).resolves.toBe(0);
    await expect(
      page.evaluate(() => (globalThis as { injected?: number }).injected),
    ).resolves.toBeUndefined();
  });

  it('shows the halt among the alerts that fire now, as text', async () => {
    const page = await newPage();
    await logIn(page, 'victor');
    const halted = page.locator('tr.alert-firing', { hasText: 'TreasuryStrategyHalted' });
    await expect(halted.textContent()).resolves.toContain(`halted because ${INJECTED}`);
    await expect(page.locator('main img').count()).resolves.toBe(0);
  });

  it("adopts an unsure cycle's order from the Attention page as an operator", async () => {
    const claimed = await database.cycles.claimSlot({
      strategy: NAME,
      account: 'default',
      slot: new Date('2031-01-01T10:00:00Z'),
      trigger: 'schedule',
      owner: 'browser-test',
    });
    await database.cycles.transition(claimed!.id, 'claimed', 'submitting');
    await database.cycles.transition(claimed!.id, 'submitting', 'unsure');
    const quote = await client.getQuote({ symbol: 'USDTBRL', amount: new Decimal('250.00') });
    const order = await client.createOrder({ quoteId: quote.quoteId });

    const page = await newPage();
    await logIn(page, 'olga');
    await page.click('a[href="/attention"]');
    const form = page.locator(`form[action="/cycles/${claimed!.id}/adopt"]`);
    await form.locator('input[name=order]').fill(order.id);
    await form.locator('button', { hasText: 'Adopt order' }).click();
    await page.waitForURL(`${url}/attention`);
    await expect(page.locator(`form[action="/cycles/${claimed!.id}/adopt"]`).count()).resolves.toBe(0);
    expect(await database.cycles.get(claimed!.id)).toMatchObject({
      state: 'placed',
      serviceOrderId: order.id,
    });
    const [audited] = await openConsoleStore(database).audit.list({ limit: 1 });
    expect(audited).toMatchObject({ actor: 'olga', action: 'cycle.adopt_order' });
  });

  it("downloads the orders page's filtered orders as the ledger CSV", async () => {
    const page = await newPage();
    await logIn(page, 'victor');
    await page.goto(`${url}/orders?strategy=${NAME}`);
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.click('a[href^="/orders.csv"]'),
    ]);
    expect(download.suggestedFilename()).toBe('orders.csv');
    const lines = (await readFile((await download.path())!, 'utf8')).trim().split('\r\n');
    expect(lines[0]).toMatch(/^account,orderId,origin,strategy,/);
    const cycleOrder = await database.orders.forCycle(cycleId);
    expect(
      lines.some((line) => line.startsWith(`default,${cycleOrder!.serviceOrderId},cycle,${NAME},`)),
    ).toBe(true);
  });

  it('logs out: the pages ask for a login again', async () => {
    const page = await newPage();
    await logIn(page, 'alice');
    await page.click('button:has-text("Log out")');
    await page.waitForURL(`${url}/login`);
    await page.goto(`${url}/orders`);
    expect(page.url()).toBe(`${url}/login`);
  });

  it('broke no content security policy on any page', () => {
    expect(policyErrors.filter((text) => /Content Security Policy|Refused to/i.test(text))).toEqual([]);
  });
});
