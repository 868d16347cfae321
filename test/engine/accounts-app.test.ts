/**
 * The worker as `run` composes it, with two accounts each at a service of its own (two sandboxes): every
 * request a service sees carries that account's token, whatever the worker does (cycles, balance guards,
 * settlement tracking, the external-order scan, readiness).
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { App } from '../../src/app.js';
import { credentialFingerprint, type RunningSandbox, startSandbox } from '../../src/sandbox/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

const TOKENS = { northco: 'north-token-never-elsewhere', southco: 'south-token-never-elsewhere' } as const;
type Account = keyof typeof TOKENS;

const strategyOf = (account: Account) => `name: ${account}-dca
account: ${account}
kind: dca
symbol: USDTBRL
amount: "100.00"
schedule: "* * * * * *"
timezone: UTC
guards:
  minCreditAvailable: "1000.00"
`;

describe('two accounts at two services', () => {
  const sandboxes = {} as Record<Account, RunningSandbox>;
  let test: TestDatabase;
  let app: App;

  beforeAll(async () => {
    for (const account of Object.keys(TOKENS) as Account[])
      sandboxes[account] = await startSandbox({ stepMs: 0, tokens: [TOKENS[account]] });
    test = await createTestDatabase();
    const folder = await mkdtemp(join(tmpdir(), 'tb-accounts-'));
    await writeFile(
      join(folder, 'settings.yaml'),
      `log:\n  level: warn\naccounts:\n${(Object.keys(TOKENS) as Account[])
        .map(
          (account) =>
            `  - name: ${account}\n    api: { url: "${sandboxes[account].url}", token: ${TOKENS[account]} }\n`,
        )
        .join('')}engine:\n  reconcile: { intervalMs: 500, visibilityLagMs: 0 }\n`,
    );
    await writeFile(join(folder, 'strategies.yaml'), `${strategyOf('northco')}---\n${strategyOf('southco')}`);
    app = new App({
      mode: 'run',
      env: {
        ...(test.url ? { DATABASE_URL: test.url } : { TREASURY_DATA_DIR: join(folder, 'data') }),
        TREASURY_CONFIG: join(folder, 'settings.yaml'),
        TREASURY_STRATEGIES: join(folder, 'strategies.yaml'),
        TREASURY_OPS_ADDR: '127.0.0.1:0',
      },
      logDestination: new Writable({ write: (_chunk, _encoding, done) => done() }),
    });
    await app.start();
  }, 60_000);

  afterAll(async () => {
    await app?.stop();
    for (const sandbox of Object.values(sandboxes)) await sandbox?.close();
    await test?.drop();
  });

  it("sends each account's token to its own service only, and records each order under its account", async () => {
    await vi.waitFor(
      () => {
        for (const sandbox of Object.values(sandboxes)) expect(sandbox.ledger().length).toBeGreaterThan(1);
      },
      { timeout: 30_000, interval: 100 },
    );
    const { database } = app.context;
    for (const account of Object.keys(TOKENS) as Account[]) {
      for (const { id } of sandboxes[account].ledger())
        await vi.waitFor(async () =>
          expect((await database.orders.getByServiceId(account, id))?.account).toBe(account),
        );
    }
    // Stopped first, so that every request the worker ever sent is in the logs.
    await app.stop();
    for (const account of Object.keys(TOKENS) as Account[]) {
      const seen = new Set(sandboxes[account].requests().map((request) => request.credential));
      expect(seen, account).toEqual(new Set([credentialFingerprint(TOKENS[account])]));
    }
  });
});
