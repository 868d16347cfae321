import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  type ConsoleStore,
  type Database,
  openConsoleStore,
  openDatabase,
  type Role,
} from '../../src/db/index.js';
import { createReceiverServer, listen } from '../../src/observability/http-server.js';
import { registerRestApi } from '../../src/rest-api/server.js';
import { authenticate, newApiToken } from '../../src/rest-api/tokens.js';
import { capturingLogger } from '../console/support.js';
import {
  type CommandDatabase,
  createCommandDatabase,
  createTestDatabase,
  type TestDatabase,
  testBackends,
} from '../support/database.js';
import { runCommand, writeWorkerFiles } from '../support/worker-process.js';

/** The API of a process that runs no cycles (`treasury-bot console`), over `database`, on port 0. */
async function startApiServer(database: Database, lines: string[], requestsPerMinute = 1000) {
  const server: FastifyInstance = createReceiverServer();
  registerRestApi(server, {
    database,
    store: openConsoleStore(database),
    clock: () => new Date(),
    logger: capturingLogger(lines),
    accounts: new Map([['default', { name: 'default' }]]),
    timeZone: 'UTC',
    requestsPerMinute,
  });
  const port = await listen(server, '127.0.0.1', 0);
  return { server, base: `http://127.0.0.1:${port}/api/v1` };
}

async function get(base: string, path: string, token?: string) {
  const response = await fetch(
    `${base}${path}`,
    token ? { headers: { authorization: `Bearer ${token}` } } : {},
  );
  const body = (await response.json()) as { code?: string };
  return { status: response.status, headers: response.headers, body };
}

/**
 * Bearer tokens on both backends: refused when missing, unknown, tampered with, revoked (at the next
 * request) or expired; limited per token; and never written anywhere but to whoever added them.
 */
describe.each(testBackends())('API tokens on %s', (backend) => {
  let test: TestDatabase;
  let store: ConsoleStore;
  let base: string;
  let server: FastifyInstance;
  const lines: string[] = [];
  const issued: string[] = [];

  async function token(name: string, role: Role = 'viewer', expiresAt: Date | null = null): Promise<string> {
    const made = newApiToken();
    await store.apiTokens.add({ name, role, accounts: null, expiresAt, ...made }, 'test-setup');
    issued.push(made.token);
    return made.token;
  }

  beforeAll(async () => {
    test = await createTestDatabase(backend);
    store = openConsoleStore(test.database);
    ({ server, base } = await startApiServer(test.database, lines, 5));
  });

  afterAll(async () => {
    await server?.close();
    await test?.drop();
  });

  it('refuses a request without a token, with an unknown one, and with a tampered one', async () => {
    const missing = await get(base, '/status');
    expect(missing.status).toBe(401);
    expect(missing.body).toMatchObject({ code: 'TOKEN_MISSING', status: 401 });
    expect(missing.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(missing.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const good = await token('tamper');
    const tampered = `${good.slice(0, -1)}${good.endsWith('A') ? 'B' : 'A'}`;
    for (const wrong of [tampered, newApiToken().token, 'tbk_short', 'not-a-token']) {
      const refused = await get(base, '/status', wrong);
      expect(refused.status, wrong).toBe(401);
      expect(refused.body.code, wrong).toBe('TOKEN_INVALID');
    }
    expect((await get(base, '/status', good)).status).toBe(200);
  });

  it('refuses a revoked token at its next request, and lets a new one of the same name in', async () => {
    const first = await token('rotated');
    expect((await get(base, '/approvals', first)).status).toBe(200);
    const revoked = await store.apiTokens.revoke('rotated', 'test');
    expect(revoked.revokedBy).toBe('test');
    const refused = await get(base, '/approvals', first);
    expect(refused.status).toBe(401);
    expect(refused.body.code).toBe('TOKEN_REVOKED');
    const second = await token('rotated');
    expect((await get(base, '/approvals', second)).status).toBe(200);
    await expect(token('rotated')).rejects.toThrow(/a live token named "rotated" already exists/);
  });

  it('refuses an expired token, judged by the database clock, and records when a token was last used', async () => {
    const expired = await token('expired', 'viewer', new Date(Date.now() - 1000));
    const refused = await get(base, '/envelopes', expired);
    expect(refused.status).toBe(401);
    expect(refused.body.code).toBe('TOKEN_EXPIRED');
    const later = await token('later', 'viewer', new Date(Date.now() + 3_600_000));
    expect((await get(base, '/envelopes', later)).status).toBe(200);
    const listed = (await store.apiTokens.list()).find((t) => t.name === 'later' && t.revokedAt === null);
    expect(listed?.lastUsedAt).not.toBeNull();
    expect((await store.apiTokens.list()).find((t) => t.name === 'expired')?.lastUsedAt).toBeNull();
  });

  it('limits each token to its requests per minute, with Retry-After, without touching other tokens', async () => {
    const busy = await token('busy');
    const calm = await token('calm');
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push((await get(base, '/approvals', busy)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    const limited = await get(base, '/approvals', busy);
    expect(limited.body.code).toBe('RATE_LIMITED');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await get(base, '/approvals', calm)).status).toBe(200);
  });

  it('answers `once` where no worker runs with a 503 problem, logged', async () => {
    const operator = await token('console-operator', 'operator');
    const response = await fetch(`${base}/strategies/any/once`, {
      method: 'POST',
      headers: { authorization: `Bearer ${operator}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(response.status).toBe(503);
    expect(((await response.json()) as { code: string }).code).toBe('WORKER_NOT_RUNNING');
    expect(lines.join('')).toContain('WORKER_NOT_RUNNING');
  });

  it('never writes a token, or its secret part, to the log or the audit log', async () => {
    const audit = await store.audit.list({ limit: 1000 });
    expect(audit.filter((entry) => entry.action === 'token.add').length).toBe(issued.length);
    const written = `${lines.join('')}${JSON.stringify(audit)}`;
    expect(lines.length).toBeGreaterThan(0);
    for (const given of issued) {
      expect(written).not.toContain(given);
      expect(written).not.toContain(given.slice(-43));
    }
    expect(written).not.toMatch(/secret_?hash/i);
  });
});

/**
 * `token add|list|revoke` as child processes: the token printed once and only by `add`, stored hashed, every
 * change audited under TREASURY_ACTOR; bad arguments refused in one line.
 */
describe('token commands', { timeout: 120_000 }, () => {
  let commands: CommandDatabase;
  let env: Record<string, string>;

  beforeAll(async () => {
    env = { ...(await writeWorkerFiles('', '')), TREASURY_ACTOR: 'carla' };
    commands = await createCommandDatabase(env);
  });

  afterAll(async () => {
    await commands?.drop();
  });

  it('adds a token printed once, lists it without its secret, and revokes it', async () => {
    const add = await runCommand(
      [
        'token',
        'add',
        'ERP-Bot',
        '--role',
        'operator',
        '--expires',
        '90d',
        '--accounts',
        'default',
        '--json',
      ],
      env,
    );
    expect(add.code, add.stderr).toBe(0);
    const added = JSON.parse(add.stdout) as {
      name: string;
      role: string;
      accounts: string[];
      expiresAt: string;
      token: string;
    };
    expect(added).toMatchObject({ name: 'erp-bot', role: 'operator', accounts: ['default'] });
    expect(added.token).toMatch(/^tbk_[A-Za-z0-9_-]{55}$/);
    const days = (new Date(added.expiresAt).getTime() - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(89.9);
    expect(days).toBeLessThanOrEqual(90);
    const found = await commands.use((database) =>
      authenticate(openConsoleStore(database).apiTokens, `Bearer ${added.token}`, new Date()),
    );
    expect(found).toMatchObject({ name: 'erp-bot', role: 'operator' });

    const plain = await runCommand(['token', 'add', 'reporting', '--role', 'viewer'], env);
    expect(plain.code, plain.stderr).toBe(0);
    const [line, printed] = plain.stdout.trim().split('\n');
    expect(line).toContain('token reporting added as viewer for every account, never expiring');
    expect(printed).toMatch(/^tbk_/);

    const list = await runCommand(['token', 'list', '--json'], env);
    const tokens = JSON.parse(list.stdout) as { name: string; starts: string; revokedAt: string | null }[];
    expect(tokens.map((t) => t.name)).toEqual(['erp-bot', 'reporting']);
    expect(tokens[0]?.starts).toBe(added.token.slice(0, 16));
    const table = await runCommand(['token', 'list'], env);
    for (const output of [list.stdout, table.stdout]) {
      expect(output).not.toContain(added.token);
      expect(output).not.toContain(printed!);
    }
    expect(table.stdout).toMatch(/erp-bot\s+operator\s+default/);

    const revoke = await runCommand(['token', 'revoke', 'erp-bot'], env);
    expect(revoke.stdout).toBe('token erp-bot revoked\n');
    await expect(
      commands.use((database) =>
        authenticate(openConsoleStore(database).apiTokens, `Bearer ${added.token}`, new Date()),
      ),
    ).rejects.toMatchObject({ code: 'TOKEN_REVOKED' });
    const audit = JSON.parse((await runCommand(['audit', '--json'], env)).stdout) as {
      actor: string;
      action: string;
      subject: string;
    }[];
    expect(audit.map((e) => [e.actor, e.action, e.subject])).toEqual([
      ['carla', 'token.add', 'token:erp-bot'],
      ['carla', 'token.add', 'token:reporting'],
      ['carla', 'token.revoke', 'token:erp-bot'],
    ]);
  });

  it.each([
    [
      ['token', 'add', 'x', '--role', 'owner'],
      '--role must be one of viewer, operator, approver, admin (got "owner")',
    ],
    [['token', 'add', 'bad name', '--role', 'viewer'], 'name "bad name" is not 1 to 64 letters'],
    [
      ['token', 'add', 'y', '--role', 'viewer', '--expires', 'soon'],
      '--expires must be a duration such as 90d',
    ],
    [
      ['token', 'add', 'z', '--role', 'viewer', '--accounts', 'default,acme'],
      '--accounts: "acme" is no account of the settings (accounts: default)',
    ],
    [['token', 'add', 'automation', '--role', 'viewer'], "is the worker's own name"],
    [['token', 'revoke', 'nobody'], 'TOKEN_NOT_FOUND: no live token named "nobody"'],
  ])('refuses %j in one line', async (args, message) => {
    const refused = await runCommand(args, env);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toContain(message);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
  });
});

/** Two replicas' APIs on their own pools: a token revoked from the command line is refused by both at once. */
describe.runIf(inject('treasuryDatabase').backend === 'postgres')('a token revoked on every replica', () => {
  it('is refused by each replica at its next request', { timeout: 60_000 }, async () => {
    const env = await writeWorkerFiles('', '');
    const commands = await createCommandDatabase(env);
    const pools = [
      await openDatabase({ url: env.DATABASE_URL }),
      await openDatabase({ url: env.DATABASE_URL }),
    ];
    const replicas = await Promise.all(pools.map((pool) => startApiServer(pool, [])));
    try {
      const added = await runCommand(['token', 'add', 'shared', '--role', 'viewer', '--json'], env);
      const { token } = JSON.parse(added.stdout) as { token: string };
      for (const replica of replicas) expect((await get(replica.base, '/status', token)).status).toBe(200);
      expect((await runCommand(['token', 'revoke', 'shared'], env)).code).toBe(0);
      for (const replica of replicas) {
        const refused = await get(replica.base, '/status', token);
        expect(refused.status).toBe(401);
        expect(refused.body.code).toBe('TOKEN_REVOKED');
      }
    } finally {
      for (const replica of replicas) await replica.server.close();
      for (const pool of pools) await pool.close();
      await commands.drop();
    }
  });
});
