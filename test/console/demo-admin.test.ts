import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword } from '../../src/console/passwords.js';
import { type Database, openConsoleStore, openMigratedDatabase } from '../../src/db/index.js';
import { DEMO_TOKEN, type RunningSandbox, startSandbox } from '../../src/sandbox/index.js';
import { createTestDatabase, type TestDatabase, testBackends } from '../support/database.js';
import { startCommand, writeWorkerFiles } from '../support/worker-process.js';
import { TEST_COST } from './support.js';

/** One strategy that never comes due during a test: `run` needs one to start. */
const STRATEGY = `name: quiet-dca
kind: dca
symbol: USDTBRL
amount: "100.00"
schedule: "0 10 1 1 *"
timezone: UTC
`;

/**
 * The admin of `npm start` lives only as long as the demo: made on the embedded database when nobody else is
 * there, and disabled, with its sessions, as soon as the worker or the console meets a real service.
 */
describe('the demo admin', { timeout: 120_000 }, () => {
  let sandbox: RunningSandbox;
  beforeAll(async () => {
    sandbox = await startSandbox({ stepMs: 0 });
  });
  afterAll(async () => {
    await sandbox?.close();
  });

  /** Starts `command` until it listens, then stops it; returns what it printed. */
  async function startAndStop(command: 'run' | 'console', env: Record<string, string>): Promise<string> {
    const running = startCommand([command], { ...env, TREASURY_OPS_ADDR: '127.0.0.1:0' });
    try {
      const line = await running.waitForLine(command === 'run' ? 'worker started' : 'web console listening');
      // The console installs its signal handlers right after that line: an answer proves they are in place.
      if (command === 'console') {
        const { port } = JSON.parse(line) as { port: number };
        expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
      }
    } finally {
      running.child.kill('SIGTERM');
    }
    const exit = await running.exited;
    expect(exit.code, `${JSON.stringify(exit)}\n${running.lines.join('\n')}`).toBe(0);
    return running.lines.join('\n');
  }

  /** The embedded database of `env`, opened when the process that owns it has stopped. */
  async function useEmbedded<T>(env: Record<string, string>, work: (database: Database) => Promise<T>) {
    const { database } = await openMigratedDatabase({ dataDir: env.TREASURY_DATA_DIR });
    try {
      return await work(database);
    } finally {
      await database.close();
    }
  }

  it('is made by a demo on the embedded database nobody else uses, with its password printed', async () => {
    const env = await writeWorkerFiles(STRATEGY, '');
    const printed = await startAndStop('run', env);
    expect(printed).toMatch(/log in as demo-admin with the one-time password \S+/);
    const person = await useEmbedded(env, (database) =>
      openConsoleStore(database).people.findByName('demo-admin'),
    );
    expect(person).toMatchObject({ role: 'admin', disabledAt: null });
  });

  it('is not made on an embedded database that has people of its own', async () => {
    const env = await writeWorkerFiles(STRATEGY, '');
    const passwordHash = await hashPassword(randomBytes(12).toString('hex'), TEST_COST);
    await useEmbedded(env, (database) =>
      openConsoleStore(database).people.add({ name: 'ana', role: 'admin', passwordHash }, 'test'),
    );
    const printed = await startAndStop('run', env);
    expect(printed).not.toContain('one-time password');
    const people = await useEmbedded(env, (database) => openConsoleStore(database).people.list());
    expect(people.map((person) => person.name)).toEqual(['ana']);
  });

  it.runIf(testBackends().includes('postgres'))(
    'is not made by a demo on a PostgreSQL database',
    async () => {
      const test = await createTestDatabase('postgres');
      try {
        const env = { ...(await writeWorkerFiles(STRATEGY, '')), DATABASE_URL: test.url! };
        const printed = await startAndStop('run', env);
        expect(printed).not.toContain('one-time password');
        expect(await openConsoleStore(test.database).people.list()).toEqual([]);
      } finally {
        await test.drop();
      }
    },
  );

  describe.each(testBackends())('left over on %s', (backend) => {
    let test: TestDatabase | undefined;
    let env: Record<string, string>;
    beforeAll(async () => {
      env = {
        ...(await writeWorkerFiles(STRATEGY, '')),
        TREASURY_API_URL: sandbox.url,
        TREASURY_API_TOKEN: DEMO_TOKEN,
      };
      if (backend === 'postgres') {
        test = await createTestDatabase('postgres');
        env.DATABASE_URL = test.url!;
      }
    });
    afterAll(async () => {
      await test?.drop();
    });
    const use = <T>(work: (database: Database) => Promise<T>) =>
      test ? work(test.database) : useEmbedded(env, work);

    /** A demo admin as an older version (or a demo run) left it, logged in. */
    async function leaveDemoAdmin(): Promise<void> {
      await use(async (database) => {
        const { people } = openConsoleStore(database);
        const passwordHash = await hashPassword('demo password of old', TEST_COST);
        const existing = await people.findByName('demo-admin');
        const person = existing
          ? await people.setPassword('demo-admin', passwordHash, 'demo-mode')
          : await people.add({ name: 'demo-admin', role: 'admin', passwordHash }, 'demo-mode');
        if (person.disabledAt !== null)
          await database.withReservedConnection((sql) => sql.query('update users set disabled_at = null'));
        await people.openSession({ ...person, disabledAt: null }, randomBytes(32).toString('hex'), 'csrf');
      });
    }

    it.each(['console', 'run'] as const)(
      'is disabled, its sessions ended, when `%s` starts against a real service',
      async (command) => {
        await leaveDemoAdmin();
        const printed = await startAndStop(command, env);
        expect(printed).not.toContain('one-time password');
        await use(async (database) => {
          const { people } = openConsoleStore(database);
          expect((await people.findByName('demo-admin'))?.disabledAt).not.toBeNull();
          const open = await database.withReservedConnection((sql) =>
            sql.query('select count(*)::int as open from console_sessions where revoked_at is null'),
          );
          expect(open).toEqual([{ open: 0 }]);
        });
      },
    );
  });
});
