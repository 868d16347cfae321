/**
 * `npm run screenshots`: the README's pictures of the web console, made from a demo run. Starts the worker in
 * demo mode (built-in sandbox, the strategies in strategies/demo.yaml) on a fresh database (DATABASE_URL when
 * set, else embedded PGlite in a temporary folder), lets it buy and settle for a while, then photographs the
 * overview and a settled cycle's trace in the system's Chromium (CHROMIUM_PATH or /usr/bin/chromium).
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Writable } from 'node:stream';
import { chromium } from 'playwright-core';
import { App } from '../src/app.js';
import { hashPassword } from '../src/console/passwords.js';
import { EVERY_ACCOUNT, openConsoleStore } from '../src/db/index.js';

const ROOT = resolve(import.meta.dirname, '..');
const RUN_MS = Number(process.env.SCREENSHOT_RUN_MS ?? 45_000);
const PASSWORD = 'screenshots only, never reused';

const quiet = new Writable({ write: (_chunk, _encoding, done) => done() });
const env: NodeJS.ProcessEnv = {
  ...process.env,
  TREASURY_API_URL: undefined,
  TREASURY_STRATEGIES: join(ROOT, 'strategies', 'demo.yaml'),
  TREASURY_OPS_ADDR: '127.0.0.1:0',
  ...(process.env.DATABASE_URL ? {} : { TREASURY_DATA_DIR: await mkdtemp(join(tmpdir(), 'tb-shots-')) }),
};
const app = new App({ mode: 'run', env, logDestination: quiet });
await app.start();
try {
  const { database } = app.context;
  const store = openConsoleStore(database);
  if (!(await store.people.findByName('screenshots'))) {
    await store.people.add(
      { name: 'screenshots', role: 'admin', passwordHash: await hashPassword(PASSWORD) },
      'screenshots',
    );
  }
  await new Promise((done) => setTimeout(done, RUN_MS));
  const url = `http://127.0.0.1:${app.ports.ops}`;
  const recent = await database.cycles.listRecent(EVERY_ACCOUNT, { limit: 200 });
  const settled = [];
  for (const cycle of recent.filter((c) => c.state === 'placed')) {
    if ((await database.orders.forCycle(cycle.id))?.status === 'settled') settled.push(cycle);
  }
  const cycle = settled[0] ?? recent.find((c) => c.state === 'placed') ?? recent[0];

  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1240, height: 900 } });
    await page.goto(`${url}/login`);
    await page.fill('input[name=name]', 'screenshots');
    await page.fill('input[name=password]', PASSWORD);
    await page.click('button[type=submit]');
    await page.waitForURL(`${url}/`);
    await page.screenshot({ path: join(ROOT, 'docs', 'console-overview.png'), fullPage: true });
    if (cycle) {
      await page.goto(`${url}/cycles/${cycle.id}`);
      await page.screenshot({ path: join(ROOT, 'docs', 'console-cycle.png'), fullPage: true });
    }
    process.stdout.write(`docs/console-overview.png, docs/console-cycle.png (cycle ${cycle?.id})\n`);
  } finally {
    await browser.close();
  }
} finally {
  await app.stop();
}
