import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Database, findMigrationsFolder, migrate, openDatabase } from '../../src/db/index.js';
import { createTestDatabase, type TestDatabase, testBackends } from '../support/database.js';
import { MIGRATION_TAGS } from './support/migrations.js';

const TABLES = [
  'api_idempotency_keys',
  'api_tokens',
  'approval_requests',
  'approvals',
  'audit_log',
  'balance_snapshots',
  'console_sessions',
  'control',
  'cycles',
  'envelopes',
  'login_challenges',
  'notifications',
  'orders',
  'quotes',
  'recovery_codes',
  'replicas',
  'second_factors',
  'settlement_events',
  'strategies',
  'strategy_versions',
  'users',
  'webhook_events',
];

async function publicTables(database: Database): Promise<string[]> {
  const rows = await database.withReservedConnection((connection) =>
    connection.query(
      "select table_name from information_schema.tables where table_schema = 'public' order by table_name",
    ),
  );
  return rows.map((row) => String(row.table_name));
}

async function appliedCount(database: Database): Promise<number> {
  const [row] = await database.withReservedConnection((connection) =>
    connection.query('select count(*)::int as n from drizzle.__drizzle_migrations'),
  );
  return Number(row?.n);
}

const MIGRATIONS = MIGRATION_TAGS;

describe.each(testBackends())('migrations on %s', (backend) => {
  const opened: TestDatabase[] = [];
  const extra: Database[] = [];
  afterEach(async () => {
    for (const database of extra.splice(0)) await database.close();
    for (const test of opened.splice(0)) await test.drop();
  });

  it('creates every table on an empty database, then applies nothing the second time', async () => {
    const test = await createTestDatabase(backend, { empty: true });
    opened.push(test);
    expect(await publicTables(test.database)).toEqual([]);

    const first = await migrate(test.database);
    expect(first.applied).toEqual(MIGRATIONS);
    expect(await publicTables(test.database)).toEqual(TABLES);

    const second = await migrate(test.database);
    expect(second.applied).toEqual([]);
    expect(await appliedCount(test.database)).toBe(MIGRATIONS.length);
  });

  it('upgrades a database of an earlier release with only the migrations it lacks', async () => {
    const test = await createTestDatabase(backend, { empty: true });
    opened.push(test);
    const folder = await mkdtemp(join(tmpdir(), 'treasury-migrations-'));
    try {
      await cp(findMigrationsFolder(), folder, { recursive: true });
      const journalFile = join(folder, 'meta', '_journal.json');
      const journal = JSON.parse(await readFile(journalFile, 'utf8')) as { entries: unknown[] };
      await writeFile(journalFile, JSON.stringify({ ...journal, entries: journal.entries.slice(0, 1) }));
      expect((await migrate(test.database, { folder })).applied).toEqual(MIGRATIONS.slice(0, 1));

      expect((await migrate(test.database)).applied).toEqual(MIGRATIONS.slice(1));
      expect(await appliedCount(test.database)).toBe(MIGRATIONS.length);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  it('folds people names to lower case, refusing names that differ only in case until one is renamed', async () => {
    const test = await createTestDatabase(backend, { empty: true });
    opened.push(test);
    const folder = await mkdtemp(join(tmpdir(), 'treasury-migrations-'));
    const before = MIGRATIONS.indexOf('0012_people_folded_names');
    const sql = (text: string) =>
      test.database.withReservedConnection((connection) => connection.query(text));
    try {
      await cp(findMigrationsFolder(), folder, { recursive: true });
      const journalFile = join(folder, 'meta', '_journal.json');
      const journal = JSON.parse(await readFile(journalFile, 'utf8')) as { entries: unknown[] };
      await writeFile(journalFile, JSON.stringify({ ...journal, entries: journal.entries.slice(0, before) }));
      await migrate(test.database, { folder });
      await sql(`insert into users (name, role, password_hash, created_at) values
        ('Ana', 'approver', 'x', now()), ('Carla', 'approver', 'x', now()), ('CARLA', 'admin', 'x', now())`);
      await expect(migrate(test.database)).rejects.toThrow(/names differ only in case: CARLA, Carla/);
      expect((await sql('select name from users order by name')).map((row) => row.name)).toEqual([
        'Ana',
        'CARLA',
        'Carla',
      ]);
      await sql(`update users set name = 'carla.admin' where name = 'CARLA'`);
      expect((await migrate(test.database)).applied).toEqual(MIGRATIONS.slice(before));
      expect((await sql('select name from users order by name')).map((row) => row.name)).toEqual([
        'ana',
        'carla',
        'carla.admin',
      ]);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  it('keeps the rows of a database from before several accounts as the account default', async () => {
    const test = await createTestDatabase(backend, { empty: true });
    opened.push(test);
    const folder = await mkdtemp(join(tmpdir(), 'treasury-migrations-'));
    const before = MIGRATIONS.indexOf('0016_several_accounts');
    const sql = (text: string) =>
      test.database.withReservedConnection((connection) => connection.query(text));
    try {
      await cp(findMigrationsFolder(), folder, { recursive: true });
      const journalFile = join(folder, 'meta', '_journal.json');
      const journal = JSON.parse(await readFile(journalFile, 'utf8')) as { entries: unknown[] };
      await writeFile(journalFile, JSON.stringify({ ...journal, entries: journal.entries.slice(0, before) }));
      await migrate(test.database, { folder });
      // Rows as the release of one account wrote them.
      await sql(`insert into strategies (name, kind, config, config_hash, first_seen_at, last_seen_at)
        values ('old', 'dca', '{}', 'h', now(), now())`);
      await sql(`insert into cycles (strategy, slot, trigger, state, owner, claimed_at, updated_at, quote_id)
        values ('old', '2026-11-01T10:00:00Z', 'schedule', 'placed', 'r', now(), now(), 'Q-OLD')`);
      await sql(`insert into orders (service_order_id, origin, symbol, amount, price, side, service_timestamp,
        status, created_at, updated_at, last_progress_at, next_check_at)
        values ('ORDER-OLD', 'external', 'USDTBRL', 100, 5.4, 'BUY', now(), 'pending', now(), now(), now(), now())`);
      await sql(`insert into balance_snapshots (fiat_currency, fiat_balance, crypto_currency, crypto_balance,
        credit_total, credit_used, credit_available, can_withdraw, taken_at)
        values ('BRL', 1, 'USDT', 2, 1000, 0, 1000, true, now())`);
      await sql(`insert into webhook_events (dedupe_key, kind, payload, received_at)
        values ('k-old', 'order.created', '{}', now())`);

      expect((await migrate(test.database)).applied).toEqual(MIGRATIONS.slice(before));
      const { database } = test;
      expect((await database.strategies.get('old'))?.account).toBe('default');
      expect(await database.cycles.ownersOfQuotes('default', ['Q-OLD'])).toHaveProperty('size', 1);
      expect((await database.orders.getByServiceId('default', 'ORDER-OLD'))?.origin).toBe('external');
      expect((await database.balances.latest('default'))?.credit.total.toFixed(2)).toBe('1000.00');
      expect((await sql("select account from webhook_events where dedupe_key = 'k-old'"))[0]?.account).toBe(
        'default',
      );
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  it('lets concurrent migrators apply each migration exactly once', async () => {
    const test = await createTestDatabase(backend, { empty: true });
    opened.push(test);
    // On PostgreSQL each migrator has its own pool, as separate replicas would; PGlite has one session.
    const others = test.url
      ? await Promise.all([1, 2, 3].map(() => openDatabase({ url: test.url, maxConnections: 1 })))
      : [test.database, test.database, test.database];
    if (test.url) extra.push(...others);

    const results = await Promise.all([test.database, ...others].map((database) => migrate(database)));

    expect(results.flatMap((result) => result.applied)).toEqual(MIGRATIONS);
    expect(await appliedCount(test.database)).toBe(MIGRATIONS.length);
    expect(await publicTables(test.database)).toEqual(TABLES);
  });

  it('refuses to start when an applied migration file was edited afterwards', async () => {
    const test = await createTestDatabase(backend);
    opened.push(test);
    const folder = await mkdtemp(join(tmpdir(), 'treasury-migrations-'));
    try {
      await cp(findMigrationsFolder(), folder, { recursive: true });
      const file = join(folder, '0000_initial.sql');
      await writeFile(file, `${await readFile(file, 'utf8')}\n-- edited\n`);

      await expect(migrate(test.database, { folder })).rejects.toMatchObject({
        code: 'DB_MIGRATION_FAILED',
        message: expect.stringContaining('0000_initial was changed'),
      });
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  it('names the failing migration and rolls all of it back', async () => {
    const test = await createTestDatabase(backend, { empty: true });
    opened.push(test);
    const folder = await mkdtemp(join(tmpdir(), 'treasury-migrations-'));
    try {
      await cp(findMigrationsFolder(), folder, { recursive: true });
      const file = join(folder, '0000_initial.sql');
      await writeFile(
        file,
        `${await readFile(file, 'utf8')}--> statement-breakpoint\nselect * from missing_table;`,
      );

      await expect(migrate(test.database, { folder })).rejects.toMatchObject({
        code: 'DB_MIGRATION_FAILED',
        message: expect.stringMatching(/migration 0000_initial failed: .*missing_table/),
      });
      expect(await publicTables(test.database)).toEqual([]);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });
});
