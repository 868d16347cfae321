/**
 * Group commit's crash case with a real process (issue #38): a burst of 40 DCA strategies due at one slot, a
 * `treasury-bot run` replica SIGKILLed after every order of the burst left and before any of them was
 * recorded, and another replica started. Whatever way the placed orders are recorded (one statement each,
 * or one for a batch), every order must be recoverable by reconciliation: each cycle adopts the order the
 * service holds for its quote, nothing is sent again, and the sandbox's books agree with the database
 * (suite/audit.ts). The strategies are due at an earlier slot too, recorded normally: a replica starts a
 * burst 8 cycles wide and widens it only as cycles end, so it is a warm replica that sends all 40 orders
 * of a burst while none of them can be recorded.
 *
 * The moment is pinned by a lock, not by timing: before the second slot the test takes `LOCK TABLE orders IN
 * SHARE MODE` in a transaction it keeps open, which blocks every insert into orders, single or batched, while
 * the intents (cycles and quotes) still commit and the orders still leave. The test waits until the service
 * holds every order and every cycle is `submitting` with nothing recorded, kills the replica, and only then
 * rolls the lock back.
 *
 * A statement waiting on a lock does not notice that its client died: PostgreSQL learns it only when it next
 * reads from or writes to the socket, so once the lock is released the dead process's record would run and
 * commit, and the crash would have happened after the record, not before. The test database therefore
 * checks its clients' sockets while statements run (client_connection_check_interval, PostgreSQL 14 on
 * Linux), and the lock is rolled back only once the server has dropped every session of the killed process.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { DEMO_TOKEN, type RunningSandbox, startSandbox } from '../../src/sandbox/index.js';
import { parseStrategyText } from '../../src/strategy/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { type RunningCommand, replicaEnvironment, startCommand } from '../support/worker-process.js';
import { auditRun } from './suite/audit.js';

const onPostgres = inject('treasuryDatabase').backend === 'postgres';
if (!onPostgres) {
  process.stderr.write(
    `\n${'!'.repeat(78)}\n!!  batch-crash.test.ts SKIPPED: a replica killed mid-burst needs a PostgreSQL server\n${'!'.repeat(78)}\n\n`,
  );
}

const STRATEGIES = 40;
/** From writing the files to the first slot: the replica's start (1–2 s idle, more on a loaded CI). */
const LEAD_MS = 5_000;
/** From the warm-up slot to the crash's: the warm-up burst takes well under a second on an idle machine. */
const GAP_MS = 5_000;
const ORDER_TIMEOUT_MS = 2_500;
/** The test's own sessions, told apart from the worker's (`treasury-bot`, src/db/connection.ts). */
const TEST_APPLICATION = 'batch-crash-test';
const WORKER_APPLICATION = 'treasury-bot';

/**
 * Reconciliation delays shrunk from minutes to seconds, as in the fault suite. Two limits are kept above the
 * test's span, so that only the kill ends the records' wait on the lock: the database time limit (a record
 * that gave up would leave its cycle unsure with the order id, for its owner to adopt) and the recovery
 * margin on `submitting` (the live replica would make its own waiting cycles unsure): both are paths other
 * tests cover, and the dead replica's cycles are taken over without them (liveness.ts). The pool holds a
 * connection for every record waiting on the lock, one per order when each is recorded alone, with room
 * left for the claims and intents of the rest of the burst.
 */
const SETTINGS = `database:
  connections: ${STRATEGIES + 10}
engine:
  orderTimeoutMs: ${ORDER_TIMEOUT_MS}
  databaseTimeoutMs: 60000
  drainTimeoutMs: 5000
  recovery:
    submittingMarginMs: 60000
    abandonAfterMs: 4000
  reconcile:
    intervalMs: 1000
    visibilityLagMs: 500
    clockSkewMs: 1000
    leaseMs: 2000
  reload:
    watch: false
tracking:
  backfill:
    enabled: false
  balance:
    enabled: false
`;

/** Two slots GAP_MS apart within one minute, so that one cron names them and no other instant this year. */
function slotsAhead(now: number): { warmUp: number; crash: number } {
  let warmUp = Math.ceil((now + LEAD_MS) / 1_000) * 1_000;
  if ((warmUp % 60_000) + GAP_MS >= 60_000) warmUp = Math.ceil(warmUp / 60_000) * 60_000;
  return { warmUp, crash: warmUp + GAP_MS };
}

function cronAt(warmUp: number, crash: number): string {
  const at = new Date(warmUp);
  return [
    `${at.getUTCSeconds()},${new Date(crash).getUTCSeconds()}`,
    at.getUTCMinutes(),
    at.getUTCHours(),
    at.getUTCDate(),
    at.getUTCMonth() + 1,
    '*',
  ].join(' ');
}

const strategyName = (index: number) => `burst-${String(index + 1).padStart(2, '0')}`;

function strategiesYaml(schedule: string): string {
  return Array.from(
    { length: STRATEGIES },
    (_, index) => `name: ${strategyName(index)}
kind: dca
symbol: USDTBRL
amount: "100.00"
schedule: "${schedule}"
timezone: UTC
`,
  ).join('---\n');
}

interface CycleRow {
  id: string;
  strategy: string;
  slot: Date;
  state: string;
  owner: string;
  reason_code: string | null;
  quote_id: string | null;
  service_order_id: string | null;
}

describe.skipIf(!onPostgres)(
  'a burst whose placed orders are not recorded when its replica is killed',
  () => {
    let sandbox: RunningSandbox;
    let test: TestDatabase;
    let sql: postgres.Sql;
    const workers: RunningCommand[] = [];

    beforeAll(async () => {
      sandbox = await startSandbox({ stepMs: 0, seed: 38, requestLogSize: 10_000 });
      test = await createTestDatabase('postgres');
      sql = postgres(test.url!, {
        max: 3,
        onnotice: () => {},
        connection: { application_name: TEST_APPLICATION },
      });
      const [database] = await sql<{ name: string }[]>`select current_database() as name`;
      // Read by every session opened after it: the replicas' sessions, all opened below.
      await sql.unsafe(`alter database "${database!.name}" set client_connection_check_interval = '100ms'`);
    });
    afterAll(async () => {
      for (const worker of workers) worker.child.kill('SIGKILL');
      await sql?.end({ timeout: 5 });
      await sandbox?.close();
      await test?.drop();
    });

    const cyclesAt = (slot: number) => sql<CycleRow[]>`select id::text, strategy, slot, state, owner,
    reason_code, quote_id, service_order_id from cycles where slot = ${new Date(slot)} order by strategy`;

    it('adopts every order by reconciliation, once each, and sends nothing again', async () => {
      const { warmUp, crash } = slotsAhead(Date.now());
      const yaml = strategiesYaml(cronAt(warmUp, crash));
      const parsed = parseStrategyText(yaml, 'burst.yaml');
      expect(parsed.problems).toEqual([]);
      expect(parsed.strategies).toHaveLength(STRATEGIES);

      const env = await replicaEnvironment({
        strategiesYaml: yaml,
        settingsYaml: SETTINGS,
        databaseUrl: test.url!,
        apiUrl: sandbox.url,
        apiToken: DEMO_TOKEN,
      });
      const launch = () => {
        const worker = startCommand(['run'], env);
        workers.push(worker);
        return worker;
      };
      const victim = launch();
      await victim.waitForLine('worker started');

      // A cold replica starts a burst 8 cycles wide and widens it as cycles end well (engine/concurrency.ts),
      // and a cycle holds its place until its order is recorded: a first burst, recorded, lets the whole
      // second one send its orders while none can be recorded.
      await vi.waitFor(
        async () => {
          const cycles = await cyclesAt(warmUp);
          expect(
            cycles.filter((cycle) => cycle.state === 'placed'),
            'warm-up cycles placed',
          ).toHaveLength(STRATEGIES);
        },
        { timeout: crash - Date.now(), interval: 50 },
      );

      // No placed order can be recorded from here on; claims, quotes and intents go on.
      const locker = await sql.reserve();
      let locked = true;
      try {
        await locker`begin`;
        await locker`lock table orders in share mode`;
        expect(Date.now(), 'the warm-up burst ended after the second slot; raise GAP_MS').toBeLessThan(crash);

        // Every order of the burst at the service, every cycle `submitting` with its quote, nothing recorded.
        await vi.waitFor(
          async () => {
            expect(sandbox.ledger().length, 'orders at the service').toBe(2 * STRATEGIES);
            const cycles = await cyclesAt(crash);
            expect(
              cycles.filter((cycle) => cycle.state === 'submitting'),
              'cycles submitting',
            ).toHaveLength(STRATEGIES);
          },
          { timeout: crash - Date.now() + 15_000, interval: 50 },
        );
        const sent = sandbox.ledger().slice(STRATEGIES);
        const inFlight = await cyclesAt(crash);
        expect(new Set(inFlight.map((cycle) => cycle.quote_id))).toEqual(
          new Set(sent.map((order) => order.quoteId)),
        );
        for (const cycle of inFlight) {
          expect(cycle).toMatchObject({ state: 'submitting', service_order_id: null });
          expect(cycle.owner).toContain(`-${victim.child.pid}-`);
        }
        const [recorded] = await sql<{ count: number }[]>`select count(*)::int as count from orders`;
        expect(recorded!.count, "orders recorded: the warm-up burst's").toBe(STRATEGIES);

        victim.child.kill('SIGKILL');
        expect((await victim.exited).signal).toBe('SIGKILL');
        // The server drops the dead process's sessions, their statements waiting on the lock with them.
        await vi.waitFor(
          async () => {
            const [row] = await sql<{ count: number }[]>`select count(*)::int as count from pg_stat_activity
            where datname = current_database() and application_name = ${WORKER_APPLICATION}`;
            expect(row!.count, 'sessions of the killed replica').toBe(0);
          },
          { timeout: 5_000, interval: 50 },
        );
        await locker`rollback`;
        locked = false;
      } finally {
        if (locked) await locker`rollback`.catch(() => {});
        locker.release();
      }

      // Another replica takes the dead one's cycles over and reconciles them.
      const successor = launch();
      await successor.waitForLine('worker started');
      await vi.waitFor(
        async () => {
          const [open] = await sql<{ count: number }[]>`select count(*)::int as count from cycles
          where state in ('claimed', 'quoted', 'submitting', 'unsure')`;
          expect(open!.count, 'cycles not settled').toBe(0);
        },
        { timeout: 30_000, interval: 200 },
      );
      successor.child.kill('SIGTERM');
      expect((await successor.exited).code).toBe(0);

      // Every cycle of the crash adopted the order the service holds for its quote; none twice, none sent again.
      const ledger = sandbox.ledger();
      expect(ledger).toHaveLength(2 * STRATEGIES);
      expect(new Set(ledger.map((order) => order.id)).size).toBe(2 * STRATEGIES);
      expect(new Set(ledger.map((order) => order.quoteId)).size).toBe(2 * STRATEGIES);
      const orderRequests = sandbox
        .requests()
        .filter((request) => request.method === 'POST' && request.path === '/client/order');
      expect(orderRequests).toHaveLength(2 * STRATEGIES);
      const orderOfQuote = new Map(ledger.map((order) => [order.quoteId, order.id]));
      const names = Array.from({ length: STRATEGIES }, (_, index) => strategyName(index));
      for (const [slot, reasonCode] of [
        [warmUp, 'ok'],
        [crash, 'reconciled'],
      ] as const) {
        const cycles = await cyclesAt(slot);
        expect(cycles.map((cycle) => cycle.strategy)).toEqual(names);
        for (const cycle of cycles) {
          expect(cycle, `${cycle.strategy} ${cycle.slot.toISOString()}`).toMatchObject({
            state: 'placed',
            reason_code: reasonCode,
            service_order_id: orderOfQuote.get(cycle.quote_id!),
          });
        }
      }
      const [slots] = await sql<{ count: number }[]>`select count(distinct slot)::int as count from cycles`;
      expect(slots!.count).toBe(2);
      const orders = await sql<{ service_order_id: string; cycle_id: string | null; origin: string }[]>`
      select service_order_id, cycle_id::text, origin from orders`;
      expect(orders).toHaveLength(2 * STRATEGIES);
      expect(orders.filter((order) => order.cycle_id === null || order.origin !== 'cycle')).toEqual([]);
      expect(new Set(orders.map((order) => order.cycle_id)).size).toBe(2 * STRATEGIES);

      // The sandbox's books against the database.
      const audit = await auditRun(sql, ledger);
      expect(audit.violations).toEqual([]);
      expect(audit.duplicateOrders).toBe(0);
      expect(audit.unreconciledCycles).toBe(0);
      expect(audit.ordersRecorded).toBe(2 * STRATEGIES);
    }, 60_000);
  },
);
