/**
 * The invariants a fault run must keep, checked from outside: the sandbox's own books against the worker's
 * database, read with plain SQL rather than through the repositories under test.
 *
 * - every order at the sandbox was preceded by a recorded quote of a cycle (intent before sending);
 * - at most one order per cycle, hence per strategy slot (cycles are unique by strategy and slot);
 * - every order at the sandbox is recorded with its cycle, and that cycle is `placed` with its id;
 * - every `placed` cycle's order exists at the sandbox (nothing recorded that did not happen);
 * - no cycle left claimed, quoted, submitting or unsure once the run has settled.
 */
import type postgres from 'postgres';
import type { SandboxOrderView } from '../../../src/sandbox/index.js';

export interface AuditFigures {
  cycles: number;
  cyclesByState: Record<string, number>;
  cycleErrors: Record<string, number>;
  ordersAtSandbox: number;
  ordersRecorded: number;
  duplicateOrders: number;
  unreconciledCycles: number;
  /** Each broken invariant, one line naming the order, cycle or slot. */
  violations: string[];
}

const UNSETTLED_STATES = ['claimed', 'quoted', 'submitting', 'unsure'];
const MAX_LISTED = 20;

export async function auditRun(
  sql: postgres.Sql,
  ledger: readonly SandboxOrderView[],
): Promise<AuditFigures> {
  const cycles = await sql<
    {
      id: string;
      strategy: string;
      slot: Date;
      state: string;
      service_order_id: string | null;
      error_code: string | null;
    }[]
  >`select id::text, strategy, slot, state, service_order_id, error_code from cycles`;
  const quotes = await sql<{ quote_id: string; cycle_id: string | null }[]>`
    select quote_id, cycle_id::text from quotes`;
  const orders = await sql<{ service_order_id: string; cycle_id: string | null; origin: string }[]>`
    select service_order_id, cycle_id::text, origin from orders`;

  const violations: string[] = [];
  const cycleById = new Map(cycles.map((cycle) => [cycle.id, cycle]));
  const cycleOfQuote = new Map(quotes.map((quote) => [quote.quote_id, quote.cycle_id]));
  const recorded = new Map(orders.map((order) => [order.service_order_id, order]));
  const ordersPerCycle = new Map<string, string[]>();

  for (const order of ledger) {
    const cycleId = cycleOfQuote.get(order.quoteId);
    if (cycleId === undefined || cycleId === null) {
      violations.push(
        `order ${order.id} at the sandbox used quote ${order.quoteId}, which no cycle recorded`,
      );
      continue;
    }
    ordersPerCycle.set(cycleId, [...(ordersPerCycle.get(cycleId) ?? []), order.id]);
    const row = recorded.get(order.id);
    if (row === undefined) violations.push(`order ${order.id} (cycle ${cycleId}) is not recorded`);
    else if (row.cycle_id !== cycleId || row.origin !== 'cycle')
      violations.push(
        `order ${order.id} is recorded as ${row.origin} of cycle ${row.cycle_id}, not of cycle ${cycleId}`,
      );
    const cycle = cycleById.get(cycleId);
    if (cycle && (cycle.state !== 'placed' || cycle.service_order_id !== order.id))
      violations.push(
        `cycle ${cycleId} has order ${order.id} at the sandbox but ended ${cycle.state} with ${cycle.service_order_id}`,
      );
  }

  let duplicateOrders = 0;
  for (const [cycleId, ids] of ordersPerCycle) {
    if (ids.length < 2) continue;
    duplicateOrders += ids.length - 1;
    const cycle = cycleById.get(cycleId);
    violations.push(
      `slot ${cycle?.strategy} ${cycle?.slot.toISOString()} has ${ids.length} orders: ${ids.join(', ')}`,
    );
  }

  const atSandbox = new Set(ledger.map((order) => order.id));
  for (const cycle of cycles) {
    if (
      cycle.state === 'placed' &&
      (cycle.service_order_id === null || !atSandbox.has(cycle.service_order_id))
    )
      violations.push(
        `cycle ${cycle.id} is placed with order ${cycle.service_order_id}, which the sandbox never took`,
      );
  }
  const unsettled = cycles.filter((cycle) => UNSETTLED_STATES.includes(cycle.state));
  for (const cycle of unsettled.slice(0, MAX_LISTED))
    violations.push(
      `cycle ${cycle.id} (${cycle.strategy} ${cycle.slot.toISOString()}) was left ${cycle.state}`,
    );

  return {
    cycles: cycles.length,
    cyclesByState: countBy(cycles.map((cycle) => cycle.state)),
    cycleErrors: countBy(cycles.flatMap((cycle) => (cycle.error_code ? [cycle.error_code] : []))),
    ordersAtSandbox: ledger.length,
    ordersRecorded: orders.length,
    duplicateOrders,
    unreconciledCycles: unsettled.length,
    violations,
  };
}

function countBy(values: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of [...values].sort()) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}
