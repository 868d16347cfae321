/**
 * Invariant 17 with real processes (issue #36): two `treasury-bot run` replicas race on every slot of one
 * target; the replica that sent the slice finishing the target is SIGKILLed after its order left and before
 * its answer came back, and is restarted. The slots after it must count that unconfirmed order as spent (the
 * target's figures count a `submitting` or `unsure` cycle in full), so nothing is bought beyond the total;
 * liveness or recovery makes the cycle unsure and reconciliation adopts the order. Then the sandbox's books
 * are audited against the database (suite/audit.ts) and what the target bought against its total.
 *
 * The moment is pinned by events, not by timing: the sandbox holds every order answer from the moment the
 * third order exists, so the fourth (the last slice) is created at the service and never answered; the test
 * sees it in the ledger, finds its cycle `submitting`, and kills that cycle's owner (the replica id carries
 * the pid). The service then cannot list or show orders until a later slot was judged, so that slot is
 * judged while the killed slice is unconfirmed, however fast the takeover is.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { Decimal } from '../../src/money.js';
import {
  DEMO_TOKEN,
  type RunningSandbox,
  type SandboxOrderView,
  startSandbox,
} from '../../src/sandbox/index.js';
import {
  LAST_ORDER_ROUNDING,
  parseStrategyText,
  type TargetStrategy,
  targetStanding,
} from '../../src/strategy/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { type RunningCommand, replicaEnvironment, startCommand } from '../support/worker-process.js';
import { auditRun } from './suite/audit.js';

const onPostgres = inject('treasuryDatabase').backend === 'postgres';
if (!onPostgres) {
  process.stderr.write(
    `\n${'!'.repeat(78)}\n!!  target-crash.test.ts SKIPPED: replicas sharing a target need a PostgreSQL server\n${'!'.repeat(78)}\n\n`,
  );
}

/**
 * 3,000.00 over ten slots with slices of at least 800.00: three slices of 800.00, then the fourth sized to
 * what is left (about 600.00, whole cents since every cost is), after which only that order's own rounding
 * is left and every later slot is `target_reached`. Six slots to spare absorb replicas that start late.
 */
const TOTAL = '3000.00';
const SLICE_MIN = '800.00';
const FULL_SLICES = 3;
const EVERY_MS = 2_000;
const WINDOW_MS = 20_000;
/** From writing the file to the window's start: the replicas' start (1–2 s idle, more on a loaded CI). */
const LEAD_MS = 4_000;
/** The last slice's answer is held beyond the worker's order timeout: only the kill ends its wait. */
const HOLD_MS = 60_000;
const ORDER_TIMEOUT_MS = 2_500;
const REPLICAS = 2;

/** Recovery and reconciliation delays shrunk from minutes to seconds, as in the fault suite. */
const SETTINGS = `engine:
  orderTimeoutMs: ${ORDER_TIMEOUT_MS}
  drainTimeoutMs: 5000
  recovery:
    submittingMarginMs: 1000
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

/** Every route through which the service could show the held order, so that nothing can adopt it yet. */
const ORDERS_HIDDEN = {
  createOrder: { latencyMs: HOLD_MS },
  listOrders: { errorRate: 1 },
  getOrder: { errorRate: 1 },
  tracking: { errorRate: 1 },
};

const iso = (ms: number) => new Date(ms).toISOString().slice(0, 19);

function targetYaml(start: number, end: number): string {
  return `name: payroll
kind: target
symbol: USDTBRL
target: { spend: "${TOTAL}" }
window: { start: "${iso(start)}", end: "${iso(end)}" }
every: "*/2 * * * * *"
slice: { min: "${SLICE_MIN}", max: "1000.00" }
timezone: UTC
`;
}

interface CycleRow {
  id: string;
  slot: Date;
  state: string;
  owner: string;
  reason_code: string | null;
  service_order_id: string | null;
  claimed_at: Date;
  updated_at: Date;
}

describe.skipIf(!onPostgres)('a target raced by two replicas, one killed on its last slice', () => {
  let sandbox: RunningSandbox;
  let test: TestDatabase;
  let sql: postgres.Sql;
  const workers: RunningCommand[] = [];

  beforeAll(async () => {
    sandbox = await startSandbox({ stepMs: 0, seed: 36 });
    test = await createTestDatabase('postgres');
    sql = postgres(test.url!, { max: 2, onnotice: () => {} });
  });
  afterAll(async () => {
    for (const worker of workers) worker.child.kill('SIGKILL');
    await sql?.end({ timeout: 5 });
    await sandbox?.close();
    await test?.drop();
  });

  it('never buys beyond the total, each slot once, and the killed slice is adopted by reconciliation', async () => {
    // Slots fall on even seconds; the window starts on one.
    const start = Math.ceil((Date.now() + LEAD_MS) / EVERY_MS) * EVERY_MS;
    const end = start + WINDOW_MS;
    const yaml = targetYaml(start, end);
    const parsed = parseStrategyText(yaml, 'payroll.yaml');
    expect(parsed.problems).toEqual([]);
    const strategy = parsed.strategies[0]!.strategy as TargetStrategy;

    const env = await replicaEnvironment({
      strategiesYaml: yaml,
      settingsYaml: SETTINGS,
      databaseUrl: test.url!,
      apiUrl: sandbox.url,
      apiToken: DEMO_TOKEN,
    });
    const live: RunningCommand[] = [];
    const launch = () => {
      const worker = startCommand(['run'], env);
      workers.push(worker);
      live.push(worker);
      return worker;
    };
    await Promise.all(
      Array.from({ length: REPLICAS }, launch).map((worker) => worker.waitForLine('worker started')),
    );
    const windowLeft = () => ({ timeout: Math.max(end - Date.now(), 1), interval: 10 });

    // The full slices are answered; from the moment the last of them exists, every answer is held.
    await vi.waitFor(() => {
      expect(sandbox.ledger().length, 'the full slices within the window').toBeGreaterThanOrEqual(
        FULL_SLICES,
      );
    }, windowLeft());
    sandbox.setFaults(ORDERS_HIDDEN);
    const held = await vi.waitFor(() => {
      const order = sandbox.ledger()[FULL_SLICES];
      expect(order, 'the last slice at the service').toBeDefined();
      return order!;
    }, windowLeft());

    // Its order left and its answer did not come back: the cycle is still `submitting`, nothing recorded.
    const [killed] = await sql<CycleRow[]>`select id::text, slot, state, owner, reason_code, service_order_id,
      claimed_at, updated_at from cycles where quote_id = ${held.quoteId}`;
    expect(killed, `no cycle recorded quote ${held.quoteId}`).toBeDefined();
    expect(killed).toMatchObject({ state: 'submitting', service_order_id: null });
    const victim = live.find((worker) => killed!.owner.includes(`-${worker.child.pid}-`));
    expect(victim, `no live replica owns ${killed!.owner}`).toBeDefined();
    victim!.child.kill('SIGKILL');
    expect((await victim!.exited).signal).toBe('SIGKILL');
    live.splice(live.indexOf(victim!), 1);
    const restarted = launch().waitForLine('worker started');

    // A later slot is judged while the killed slice is unconfirmed: it must count it, and buy nothing.
    const judgedAfter = await vi.waitFor(
      async () => {
        const [row] = await sql<
          CycleRow[]
        >`select id::text, slot, state, owner, reason_code, service_order_id,
        claimed_at, updated_at from cycles where strategy = 'payroll' and slot > ${killed!.slot}
        and state not in ('claimed', 'quoted', 'submitting') order by slot limit 1`;
        expect(row, 'a slot after the killed one, judged').toBeDefined();
        return row!;
      },
      { ...windowLeft(), interval: 100 },
    );
    expect(judgedAfter).toMatchObject({ state: 'skipped', reason_code: 'target_reached' });
    const [still] = await sql<{ state: string }[]>`select state from cycles where id = ${killed!.id}`;
    expect(['submitting', 'unsure']).toContain(still!.state);
    expect(sandbox.ledger()).toHaveLength(FULL_SLICES + 1);
    sandbox.setFaults({});
    await restarted;

    // The window passes and reconciliation settles every cycle; then a graceful stop.
    await vi.waitFor(
      async () => {
        expect(Date.now()).toBeGreaterThanOrEqual(end);
        const [open] = await sql<{ count: number }[]>`select count(*)::int as count from cycles
          where state in ('claimed', 'quoted', 'submitting', 'unsure')`;
        expect(open!.count).toBe(0);
      },
      { timeout: end - Date.now() + 15_000, interval: 200 },
    );
    for (const worker of live) worker.child.kill('SIGTERM');
    const exits = await Promise.all(live.map((worker) => worker.exited));
    expect(exits.map((exit) => exit.code)).toEqual(live.map(() => 0));

    // The sandbox's books against the database: every order recorded with its cycle, one per slot.
    const ledger = sandbox.ledger();
    const audit = await auditRun(sql, ledger);
    expect(audit.violations).toEqual([]);
    expect(audit.duplicateOrders).toBe(0);
    expect(audit.unreconciledCycles).toBe(0);
    const cycles = await sql<CycleRow[]>`select id::text, slot, state, owner, reason_code, service_order_id,
      claimed_at, updated_at from cycles order by slot`;
    expect(new Set(cycles.map((cycle) => cycle.slot.getTime())).size).toBe(cycles.length);
    for (const cycle of cycles) {
      expect(cycle.slot.getTime()).toBeGreaterThanOrEqual(start);
      expect(cycle.slot.getTime()).toBeLessThan(end);
      expect(cycle.slot.getTime() % EVERY_MS).toBe(0);
    }

    // The killed slice was the last order, and reconciliation adopted it into its own cycle.
    const adopted = cycles.find((cycle) => cycle.id === killed!.id)!;
    expect(adopted).toMatchObject({ state: 'placed', service_order_id: held.id, reason_code: 'reconciled' });
    expect(ledger.map((order) => order.id).at(-1)).toBe(held.id);
    expect(ledger.slice(0, FULL_SLICES).every((order) => new Decimal(order.amount).equals(SLICE_MIN))).toBe(
      true,
    );
    expect(new Decimal(held.amount).lessThan(SLICE_MIN)).toBe(true);
    expect(cycles.filter((cycle) => cycle.slot > killed!.slot && cycle.state !== 'skipped')).toEqual([]);

    // What the target's orders spent at the service: never beyond the total, and reached.
    const standing = targetStanding(strategy, progressAt(ledger), new Date());
    expect(standing.spent.lessThanOrEqualTo(TOTAL)).toBe(true);
    expect(
      standing.state,
      `target ${standing.state}: spent ${standing.spent} of ${TOTAL}, ${standing.left} left`,
    ).toBe('completed');
    expect(standing.left.lessThan(LAST_ORDER_ROUNDING)).toBe(true);
  }, 60_000);
});

/** A target's progress from the service's own books: what its orders cost and delivered. */
function progressAt(ledger: readonly SandboxOrderView[]) {
  let spent = new Decimal(0);
  let received = new Decimal(0);
  for (const order of ledger) {
    spent = spent.plus(order.totalCost);
    received = received.plus(order.totalFilled);
  }
  return { spent, received };
}
