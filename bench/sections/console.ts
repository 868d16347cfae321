/**
 * The web console's pages over a large record: N cycles (default 100,000) of 10 strategies, a minute apart
 * and ending now (60% placed, each with its quote, order and a settlement step; skipped and failed ones; a
 * few unsure, some with a discrepancy, some external orders), inserted with generate_series. The console
 * runs in this process on a fresh listener (as `treasury-bot console` serves it), one admin logs in, and
 * each page is fetched a few times to warm up, then timed SAMPLES times over HTTP. Target: every page
 * under 200 ms (p95). The floor is the same request path with nothing of the console's work in it: an
 * authenticated GET of the stylesheet (session lookup, security headers, the listener's round trip).
 */

import { Writable } from 'node:stream';
import postgres from 'postgres';
import { hashPassword } from '../../src/console/passwords.js';
import { registerConsole } from '../../src/console/server.js';
import { EVERY_ACCOUNT, openConsoleStore, openDatabase } from '../../src/db/index.js';
import { createReceiverServer, listen } from '../../src/observability/http-server.js';
import { createLogger } from '../../src/observability/logger.js';
import { formatMs, type ReportRow } from '../harness/report.js';
import { percentile, ratio, round } from '../harness/stats.js';

const STRATEGIES = 10;
const SAMPLES = 30;
const WARMUP = 3;
const TARGET_MS = 200;
const PASSWORD = 'bench console password';

export interface ConsolePageFigures {
  path: string;
  p50Ms: number;
  p95Ms: number;
  ratioToFloor: number;
}

export interface ConsoleResult {
  cycles: number;
  insertSeconds: number;
  floorP50Ms: number;
  pages: ConsolePageFigures[];
  targetMs: number;
}

async function insertRecord(databaseUrl: string, count: number): Promise<void> {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  try {
    await sql.begin(async (tx) => {
      await tx.unsafe(`
        insert into strategies (name, kind, config, config_hash, first_seen_at, last_seen_at)
        select 'bench-console-' || s, 'dca',
               jsonb_build_object('name', 'bench-console-' || s, 'schedule', '* * * * *', 'timezone', 'UTC',
                 'budget', jsonb_build_object('perDay', '400000.00', 'perMonth', '9000000.00'),
                 'guards', jsonb_build_object('minCreditAvailable', '1000.00')),
               'bench-v1', now(), now()
        from generate_series(0, ${STRATEGIES - 1}) s`);
      // n % 10: 0-5 placed, 6-8 skipped, 9 failed; the newest 20 are unsure, every 5,000th placed one has a
      // discrepancy.
      await tx.unsafe(`
        insert into cycles (strategy, slot, trigger, state, owner, reason_code, quote_id, amount, price,
                            total_cost, service_order_id, trace, claimed_at, updated_at, submitted_at,
                            finished_at, discrepancy)
        select 'bench-console-' || (n % ${STRATEGIES}), t, 'schedule', st, 'bench',
               case st when 'skipped' then 'price_not_below_threshold' when 'failed' then 'order_rejected'
                       when 'placed' then 'ok' end,
               case when st in ('placed', 'unsure') then 'Q' || lpad(n::text, 8, '0') end,
               case when st in ('placed', 'unsure') then 1000.00 end,
               case when st in ('placed', 'unsure') then 5.4000 + (n % 100) * 0.0001 end,
               case when st in ('placed', 'unsure') then 999.99 end,
               case when st = 'placed' then 'order-' || n end,
               '[{"rule":"max_price","passed":true,"detail":{"price":"5.40","maxPrice":"9.00"}}]'::jsonb,
               t, t, case when st in ('placed', 'unsure', 'failed') then t end, case when st <> 'unsure' then t end,
               case when st = 'placed' and n % 5000 = 0
                    then '[{"field":"price","expected":"5.4000","got":"5.4100"}]'::jsonb end
        from (select n, now() - n * interval '1 minute' as t,
                     case when n <= 20 then 'unsure' when n % 10 < 6 then 'placed'
                          when n % 10 < 9 then 'skipped' else 'failed' end as st
              from generate_series(1, ${count}) n) g`);
      await tx.unsafe(`
        insert into quotes (cycle_id, quote_id, symbol, amount, price, total_cost, total_filled,
                            requested_at, received_at, deadline_at)
        select c.id, c.quote_id, 'USDTBRL', c.amount, c.price, c.total_cost, round(999.99 / c.price, 6),
               c.slot, c.slot, c.slot + interval '4 seconds'
        from cycles c where c.quote_id is not null`);
      await tx.unsafe(`update cycles c set quote_record_id = q.id from quotes q where q.cycle_id = c.id`);
      await tx.unsafe(`
        insert into orders (service_order_id, cycle_id, origin, quote_id, symbol, amount, price, side,
                            service_timestamp, status, created_at, updated_at, last_progress_at,
                            next_check_at, settled_at)
        select c.service_order_id, c.id, 'cycle', c.quote_id, 'USDTBRL', c.amount, c.price, 'BUY', c.slot,
               'settled', c.slot, c.slot, c.slot, c.slot, c.slot + interval '10 minutes'
        from cycles c where c.state = 'placed'`);
      await tx.unsafe(`
        insert into orders (service_order_id, cycle_id, origin, symbol, amount, price, side,
                            service_timestamp, status, created_at, updated_at, last_progress_at, next_check_at)
        select 'external-' || n, null, 'external', 'USDTBRL', 500.00, 5.41, 'BUY',
               now() - n * interval '1 hour', 'pending', now(), now(), now(), now()
        from generate_series(1, 30) n`);
      await tx.unsafe(`
        insert into settlement_events (order_id, source, from_status, to_status, recorded_at)
        select o.id, 'poll', 'pending', o.status, o.updated_at from orders o`);
    });
    await sql.unsafe('analyze');
  } finally {
    await sql.end({ timeout: 5 });
  }
}

export async function runConsoleSection(databaseUrl: string, count: number) {
  const insertStarted = performance.now();
  await insertRecord(databaseUrl, count);
  const insertSeconds = (performance.now() - insertStarted) / 1000;

  const database = await openDatabase({ url: databaseUrl, maxConnections: 10 });
  const store = openConsoleStore(database);
  await store.people.add(
    { name: 'bench-admin', role: 'admin', passwordHash: await hashPassword(PASSWORD) },
    'bench',
  );
  const server = createReceiverServer();
  const logger = createLogger({
    level: 'silent',
    destination: new Writable({ write: (_c, _e, done) => done() }),
  });
  // The bench's rows are the one account of a deployment without `accounts:`.
  registerConsole(server, {
    database,
    store,
    clock: () => new Date(),
    logger,
    accounts: new Map([['default', { name: 'default' }]]),
  });
  const base = `http://127.0.0.1:${await listen(server, '127.0.0.1', 0)}`;
  try {
    const cookie = await logIn(base);
    const [someCycle] = await database.cycles.listRecent(EVERY_ACCOUNT, {
      limit: 1,
      strategy: 'bench-console-3',
    });
    const day = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    const paths = [
      '/',
      '/live',
      '/strategies',
      '/orders',
      '/orders?strategy=bench-console-3',
      '/orders?status=settled&before=30000',
      `/orders.csv?strategy=bench-console-3&from=${day}`,
      '/attention',
      `/cycles/${someCycle!.id}`,
      '/audit',
      '/users',
    ];
    const time = async (path: string) => {
      const started = performance.now();
      const response = await fetch(`${base}${path}`, { headers: { cookie }, redirect: 'manual' });
      await response.arrayBuffer();
      if (response.status !== 200) throw new Error(`${path} answered ${response.status}`);
      return performance.now() - started;
    };
    const sample = async (path: string) => {
      for (let round = 0; round < WARMUP; round++) await time(path);
      const samples: number[] = [];
      for (let round = 0; round < SAMPLES; round++) samples.push(await time(path));
      samples.sort((a, b) => a - b);
      return { p50: percentile(samples, 0.5), p95: percentile(samples, 0.95) };
    };
    const floor = await sample('/assets/console.css');
    const pages: ConsolePageFigures[] = [];
    for (const path of paths) {
      const figures = await sample(path);
      pages.push({
        path,
        p50Ms: round(figures.p50, 1),
        p95Ms: round(figures.p95, 1),
        ratioToFloor: round(ratio(figures.p50, floor.p50), 1),
      });
    }
    const result: ConsoleResult = {
      cycles: count,
      insertSeconds: round(insertSeconds, 1),
      floorP50Ms: round(floor.p50, 2),
      pages,
      targetMs: TARGET_MS,
    };
    const rows: ReportRow[] = [
      {
        section: 'console',
        metric: `record inserted (${count} cycles), s`,
        value: String(result.insertSeconds),
      },
      { section: 'console', metric: 'floor: authenticated stylesheet, p50', value: formatMs(floor.p50) },
      ...pages.map((page) => ({
        section: 'console',
        metric: `${page.path} p50 / p95 (× floor)`,
        value: `${formatMs(page.p50Ms)} / ${formatMs(page.p95Ms)} (${page.ratioToFloor}×)`,
        target: `p95 < ${TARGET_MS} ms`,
        met: page.p95Ms < TARGET_MS,
      })),
    ];
    return { result, rows };
  } finally {
    await server.close();
    await database.close();
  }
}

/** The session cookie of a fresh login (the login form's CSRF cookie and token first). */
async function logIn(base: string): Promise<string> {
  const form = await fetch(`${base}/login`);
  const csrfCookie = form.headers
    .getSetCookie()
    .map((line) => line.split(';')[0])
    .join('; ');
  const token = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? '';
  const answer = await fetch(`${base}/login`, {
    method: 'POST',
    headers: { cookie: csrfCookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: token, name: 'bench-admin', password: PASSWORD }).toString(),
    redirect: 'manual',
  });
  if (answer.status !== 303) throw new Error(`bench login answered ${answer.status}`);
  const session = answer.headers.getSetCookie().find((line) => line.startsWith('tb_session='));
  if (!session) throw new Error('bench login set no session cookie');
  return session.split(';')[0]!;
}
