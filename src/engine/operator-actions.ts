/**
 * What an operator does after an ambiguous reconciliation halted a strategy: settle each unsure cycle by
 * hand (adopt the order that is ours, or declare that none was placed), then lift the halt. Only a person
 * can tell which of several matching orders belongs to a cycle; these actions refuse anything that would
 * make the records contradict themselves. Each decision is written with its audit row, naming `actor`.
 */
import {
  type AuditEntry,
  type Cycle,
  type Database,
  EVERY_ACCOUNT,
  type OrderRecord,
  openConsoleStore,
  type StrategyRecord,
} from '../db/index.js';
import { type AccountLink, UnknownAccountError } from './context.js';
import type { EngineReason } from './outcomes.js';
import { toServiceOrder } from './service-orders.js';

export type OperatorErrorCode =
  | 'CYCLE_NOT_FOUND'
  | 'CYCLE_NOT_UNSURE'
  | 'ORDER_OWNED_BY_OTHER_CYCLE'
  | 'ORDER_SYMBOL_MISMATCH'
  | 'STRATEGY_NOT_FOUND'
  | 'STRATEGY_HAS_UNSURE_CYCLES';

export class OperatorActionError extends Error {
  override readonly name = 'OperatorActionError';
  constructor(
    readonly code: OperatorErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** The reason code every cycle settled by hand carries. */
export const OPERATOR_REASON: EngineReason = 'operator_resolved';

export type Resolution = { kind: 'order'; serviceOrderId: string } | { kind: 'not_placed' };

export interface ResolveResult {
  cycle: Cycle;
  /** The adopted order, for a resolution by order. */
  order?: OrderRecord;
}

/**
 * Settles an unsure cycle. By order: the order is read from the service (so it exists, with its real
 * figures) and recorded like reconciliation's adoption, with the cycle's move to placed in one transaction.
 * `actor`: the person who decided, written to the audit log in the move's transaction (the console and the
 * command line both name one).
 */
export async function resolveUnsureCycle(
  deps: { database: Database; accounts?: ReadonlyMap<string, AccountLink> },
  cycleId: number,
  resolution: Resolution,
  actor: string,
): Promise<ResolveResult> {
  const { database } = deps;
  const cycle = await unsureCycle(database, cycleId);
  const audit = (after: Record<string, string>): AuditEntry => ({
    actor,
    action: resolution.kind === 'order' ? 'cycle.adopt_order' : 'cycle.reconcile',
    subject: `cycle:${cycle.id}`,
    before: { state: 'unsure', strategy: cycle.strategy },
    after: { ...after, reasonCode: OPERATOR_REASON },
  });
  if (resolution.kind === 'not_placed') {
    const moved = await database.cycles.transition(
      cycle.id,
      'unsure',
      'not_placed',
      { reasonCode: OPERATOR_REASON },
      { audit: audit({ state: 'not_placed' }) },
    );
    return { cycle: moved ?? (await movedMeanwhile(database, cycle.id)) };
  }

  const { serviceOrderId } = resolution;
  await refuseOrderOfOtherCycle(database, cycle, serviceOrderId);
  if (!deps.accounts) throw new TypeError('resolving by order needs the purchase service clients');
  // The order is looked for at the cycle's own account, whose service alone can hold it.
  const account = deps.accounts.get(cycle.account);
  if (!account) throw new UnknownAccountError(cycle.account, deps.accounts.keys());
  const detail = await account.client.getOrder(serviceOrderId);
  const quote = (await database.quotes.forCycle(cycle.id)).find((q) => q.id === cycle.quoteRecordId);
  if (quote && quote.symbol !== detail.symbol) {
    throw new OperatorActionError(
      'ORDER_SYMBOL_MISMATCH',
      `order ${serviceOrderId} is a ${detail.symbol} order but cycle ${cycle.id} quoted ${quote.symbol}`,
    );
  }
  const recorded = await database.orders.recordPlacedWithCycle(
    cycle.id,
    toServiceOrder(cycle.account, detail),
    { from: 'unsure', reasonCode: OPERATOR_REASON },
    { source: 'reconcile', audit: audit({ state: 'placed', orderId: serviceOrderId }) },
  );
  // Another cycle adopted the order between the check above and the transaction.
  if (recorded.order.cycleId !== cycle.id) throw orderOwnedBy(serviceOrderId, recorded.order.cycleId);
  return { cycle: recorded.cycle ?? (await movedMeanwhile(database, cycle.id)), order: recorded.order };
}

/** Lifts a strategy's halt once none of its cycles is unsure any more. */
export async function clearStrategyHalt(
  database: Database,
  name: string,
  actor: string,
): Promise<{ strategy: StrategyRecord; wasHalted: boolean }> {
  const before = await database.strategies.get(name);
  if (!before) {
    throw new OperatorActionError('STRATEGY_NOT_FOUND', `no strategy named "${name}" was ever recorded`);
  }
  // Every account's: a strategy's earlier cycles may be under the account an earlier version named.
  const unsure = (await database.cycles.listByState(EVERY_ACCOUNT, 'unsure', 10_000)).filter(
    (c) => c.strategy === name,
  );
  if (unsure.length > 0) {
    const ids = unsure.map((c) => c.id).join(', ');
    throw new OperatorActionError(
      'STRATEGY_HAS_UNSURE_CYCLES',
      `strategy "${name}" still has ${unsure.length} unsure cycle(s) (${ids}): settle each first with ` +
        '`treasury-bot resolve CYCLE_ID --order SERVICE_ORDER_ID` or `treasury-bot resolve CYCLE_ID --not-placed`',
    );
  }
  if (before.haltedAt === null) return { strategy: before, wasHalted: false };
  // The console's audited resume: it checks the unsure cycles again inside its transaction.
  const strategy = await openConsoleStore(database).actions.resumeStrategy(name, actor);
  return { strategy, wasHalted: true };
}

async function unsureCycle(database: Database, cycleId: number): Promise<Cycle> {
  const cycle = await database.cycles.get(cycleId);
  if (!cycle) throw new OperatorActionError('CYCLE_NOT_FOUND', `no cycle with id ${cycleId}`);
  if (cycle.state !== 'unsure') throw notUnsure(cycle);
  return cycle;
}

async function refuseOrderOfOtherCycle(database: Database, cycle: Cycle, serviceOrderId: string) {
  const known = await database.orders.getByServiceId(cycle.account, serviceOrderId);
  if (known && known.cycleId !== null && known.cycleId !== cycle.id) {
    throw orderOwnedBy(serviceOrderId, known.cycleId);
  }
}

/** The compare-and-set missed: reconciliation (or another operator) settled the cycle first. */
async function movedMeanwhile(database: Database, cycleId: number): Promise<never> {
  const now = await database.cycles.get(cycleId);
  throw now ? notUnsure(now) : new OperatorActionError('CYCLE_NOT_FOUND', `no cycle with id ${cycleId}`);
}

function notUnsure(cycle: Cycle): OperatorActionError {
  return new OperatorActionError(
    'CYCLE_NOT_UNSURE',
    `cycle ${cycle.id} (${cycle.strategy}, slot ${cycle.slot.toISOString()}) is '${cycle.state}', not unsure: nothing to resolve`,
  );
}

function orderOwnedBy(serviceOrderId: string, cycleId: number | null): OperatorActionError {
  return new OperatorActionError(
    'ORDER_OWNED_BY_OTHER_CYCLE',
    `order ${serviceOrderId} is already recorded for cycle ${cycleId}; one order belongs to one cycle`,
  );
}
