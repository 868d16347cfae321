import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword } from '../../src/console/passwords.js';
import { registerConsole } from '../../src/console/server.js';
import { openConsoleStore } from '../../src/db/index.js';
import { Maintenance } from '../../src/engine/index.js';
import { createReceiverServer, listen } from '../../src/observability/http-server.js';
import { createLogger } from '../../src/observability/logger.js';
import type { DcaStrategy } from '../../src/strategy/index.js';
import { d, type EngineBench, freshSlot, startEngineBench, strategy } from '../engine/support/harness.js';
import { chromiumFor, LAUNCH_ARGS } from './chromium.js';

const CHROMIUM = chromiumFor('browser-approvals.test.ts');
const PASSWORD = 'correct horse battery staple';
/** Every order of it waits for one person. */
const GUARDED: DcaStrategy = strategy({
  name: 'browser-approval',
  approval: { required: 'always', approvers: 1, timeoutMs: 3_600_000, priceTolerancePct: d('0.5') },
});

/**
 * Four-eyes control in the system's Chromium: a real engine cycle against the sandbox parks; an approver
 * approves it from the Approvals page; the maintenance pass (what a running worker does on its interval)
 * buys it at a fresh quote, and the cycle's page shows it placed with who approved it. A viewer sees the
 * parked cycle but no button, and the server refuses the viewer's forged approval.
 */
describe.skipIf(!CHROMIUM)('console approvals in Chromium', { timeout: 90_000 }, () => {
  let bench: EngineBench;
  let server: FastifyInstance;
  let url: string;
  let browser: Browser;
  const policyErrors: string[] = [];

  async function parkedCycle(): Promise<number> {
    const report = await bench.run(GUARDED, freshSlot());
    expect(report.outcome).toBe('awaiting-approval');
    return (await bench.database.cycles.getBySlot(GUARDED.name, new Date(report.slot)))!.id;
  }

  async function logIn(name: string): Promise<Page> {
    const page = await (await browser.newContext()).newPage();
    page.on('console', (message) => {
      if (message.type() === 'error') policyErrors.push(message.text());
    });
    await page.goto(`${url}/`);
    await page.fill('input[name=name]', name);
    await page.fill('input[name=password]', PASSWORD);
    await page.click('button[type=submit]');
    await page.waitForURL(`${url}/`);
    return page;
  }

  beforeAll(async () => {
    bench = await startEngineBench();
    const store = openConsoleStore(bench.database);
    const passwordHash = await hashPassword(PASSWORD, { N: 2 ** 10, r: 8, p: 1 });
    await store.people.add({ name: 'ana', role: 'approver', passwordHash }, 'test');
    await store.people.add({ name: 'victor', role: 'viewer', passwordHash }, 'test');
    server = createReceiverServer();
    const logger = createLogger({
      level: 'silent',
      destination: new Writable({ write: (_c, _e, done) => done() }),
    });
    registerConsole(server, {
      database: bench.database,
      store,
      clock: () => new Date(),
      logger,
      accounts: new Map([['default', { name: 'default' }]]),
    });
    url = `http://127.0.0.1:${await listen(server, '127.0.0.1', 0)}`;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await bench?.close();
  });

  it('an approver approves a parked cycle and sees it placed', async () => {
    const id = await parkedCycle();
    const page = await logIn('ana');
    await page.click('nav a[href="/approvals"]');
    const row = page.locator(`tr#cycle-${id}`);
    await expect(row.textContent()).resolves.toContain('0 of 1');
    await row.locator('form.approve button').click();
    await page.waitForURL(`${url}/approvals`);
    await expect(page.locator(`tr#cycle-${id}`).count()).resolves.toBe(0);

    const pass = await new Maintenance(bench.context, { strategies: () => [GUARDED] }).runOnce();
    expect(pass.approvals?.resumed).toMatchObject([{ outcome: 'placed', reason: 'ok' }]);

    await page.goto(`${url}/cycles/${id}`);
    await expect(page.locator('main > p').first().locator('.state').textContent()).resolves.toBe('placed');
    const decision = page.locator('tr', { hasText: 'Decision' });
    await expect(decision.textContent()).resolves.toMatch(/approved .* by ana/);
    await expect(page.locator('main').textContent()).resolves.toContain('Order ');
  });

  it('shows a viewer the parked cycle without a button; the forged approval is refused', async () => {
    const id = await parkedCycle();
    const page = await logIn('victor');
    await page.goto(`${url}/approvals`);
    await expect(page.locator(`tr#cycle-${id}`).count()).resolves.toBe(1);
    await expect(page.locator('main form[method=post] button').count()).resolves.toBe(0);
    const csrf = await page.locator('input[name=_csrf]').first().getAttribute('value');
    const forged = await page.request.post(`${url}/cycles/${id}/approve`, { form: { _csrf: csrf ?? '' } });
    expect(forged.status()).toBe(403);
    expect(await forged.text()).toContain('a viewer may not do this');
    expect((await bench.database.cycles.get(id))?.state).toBe('awaiting_approval');
    expect(await bench.database.approvals.forCycle(id)).toMatchObject({ decision: null, approvals: [] });
  });

  it('broke no content security policy on any page', () => {
    expect(policyErrors.filter((text) => /Content Security Policy|Refused to/i.test(text))).toEqual([]);
  });
});
