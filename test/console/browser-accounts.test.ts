import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword } from '../../src/console/passwords.js';
import { d } from '../engine/support/harness.js';
import { chromiumFor, LAUNCH_ARGS } from './chromium.js';
import { PASSWORD, type RunningConsole, startTestConsole, TEST_COST } from './support.js';

const CHROMIUM = chromiumFor('browser-accounts.test.ts');

/**
 * The account column and filter in the system's Chromium, the way a person uses them: an admin reads both
 * accounts' orders, chooses one in the filter and gets its rows only, with the download narrowed the same
 * way; a person limited to one account is offered only theirs.
 */
describe.skipIf(!CHROMIUM)('console accounts in Chromium', { timeout: 90_000 }, () => {
  let console: RunningConsole;
  let browser: Browser;

  async function logIn(name: string): Promise<Page> {
    const page = await (await browser.newContext()).newPage();
    await page.goto(`${console.url}/login`);
    await page.fill('input[name=name]', name);
    await page.fill('input[name=password]', PASSWORD);
    await page.click('button[type=submit]');
    await page.waitForURL(`${console.url}/`);
    return page;
  }

  /** The Account cell of every row of the orders table. */
  const accountsShown = (page: Page) =>
    page.locator('main table').last().locator('tbody tr td:nth-child(2)').allTextContents();

  beforeAll(async () => {
    console = await startTestConsole({ accounts: ['alpha', 'beta'] });
    for (const account of ['alpha', 'beta']) {
      await console.test.database.orders.recordExternal({
        account,
        id: `${account.toUpperCase()}-EXT`,
        symbol: 'USDTBRL',
        amount: d('50.00'),
        price: d('5.40'),
        side: 'buy',
        timestamp: new Date(),
      });
    }
    const passwordHash = await hashPassword(PASSWORD, TEST_COST);
    await console.store.people.add(
      { name: 'vera', role: 'viewer', passwordHash, accounts: ['alpha'] },
      'test',
    );
    browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await console?.close();
  });

  it('filters the orders on the account an admin chooses', async () => {
    const page = await logIn('admin');
    await page.click('nav a[href="/orders"]');
    await expect(page.locator('main table').last().locator('thead th').nth(1).textContent()).resolves.toBe(
      'Account',
    );
    await expect(accountsShown(page).then((shown) => [...shown].sort())).resolves.toEqual(['alpha', 'beta']);
    await page.selectOption('form.filters select[name=account]', 'beta');
    await page.click('form.filters button[type=submit]');
    await page.waitForURL(/\/orders\?account=beta/);
    await expect(accountsShown(page)).resolves.toEqual(['beta']);
    await expect(page.locator('a[href^="/orders.csv"]').getAttribute('href')).resolves.toBe(
      '/orders.csv?account=beta',
    );
  });

  it('offers a person limited to alpha only alpha', async () => {
    const page = await logIn('vera');
    await page.click('nav a[href="/orders"]');
    await expect(page.locator('select[name=account] option').allTextContents()).resolves.toEqual([
      'all',
      'alpha',
    ]);
    await expect(accountsShown(page)).resolves.toEqual(['alpha']);
  });
});
