/**
 * Reconciliation of unsure cycles: each is leased (SKIP LOCKED, so replicas split the work) and looked for
 * in the service's order list. Ownership is decided by quoteId whenever the service reports one: an order
 * carrying the cycle's quoteId is its order whatever its figures, and figures that differ from the quote are
 * recorded as a discrepancy that halts the strategy. One match is adopted (order recorded, cycle placed); no match after the
 * quote window plus the visibility lag proves the order absent (not_placed), but only when the whole list
 * was read; several matches stop the strategy's automation and raise an alert, because only a person can
 * tell which order is ours.
 */
import type { OrderDetail, OrderListItem } from '../api/index.js';
import type { Cycle, FigureDifference, QuoteRecord } from '../db/index.js';
import { errorCodeOf } from '../errors.js';
import type { AccountContext, EngineContext } from './context.js';
import { withDatabase } from './engine-errors.js';
import {
  type CandidateOrder,
  type CycleFingerprint,
  figureDifferences,
  figuresFit,
  fingerprintOf,
  matchOrders,
} from './order-matching.js';
import { listOrdersBetween, type OrderListing, toServiceOrder } from './service-orders.js';

export type ReconcileVerdict = 'adopted' | 'not_placed' | 'ambiguous' | 'waiting';

export interface ReconcileResult {
  examined: number;
  adopted: number;
  notPlaced: number;
  ambiguous: number;
  waiting: number;
  errors: number;
}

export async function reconcileUnsureCycles(
  context: AccountContext,
  now: Date,
  options: { signal?: AbortSignal } = {},
): Promise<ReconcileResult> {
  const { signal } = options;
  const { reconcile } = context.settings;
  const leased = await withDatabase(context, 'cycles_claim_unsure', () =>
    context.database.cycles.claimUnsure(
      context.account.name,
      context.replicaId,
      reconcile.leaseMs,
      reconcile.batchSize,
      now,
    ),
  );
  const result: ReconcileResult = {
    examined: 0,
    adopted: 0,
    notPlaced: 0,
    ambiguous: 0,
    waiting: 0,
    errors: 0,
  };
  for (const cycle of leased) {
    // Stopping: the cycles not examined keep their lease until it runs out, then any replica takes them.
    if (signal?.aborted) break;
    result.examined++;
    try {
      const verdict = await reconcileCycle(context, cycle, now, signal);
      if (verdict === 'adopted') result.adopted++;
      else if (verdict === 'not_placed') result.notPlaced++;
      else if (verdict === 'ambiguous') result.ambiguous++;
      else result.waiting++;
    } catch (error) {
      // Cut short by a stop, not failed: nothing to report; the lease runs out and the cycle is examined again.
      if (signal?.aborted) break;
      result.errors++;
      context.logger.warn(
        { cycleId: cycle.id, strategy: cycle.strategy, errorCode: errorCodeOf(error), err: error },
        'reconciliation of an unsure cycle failed; it is retried when its lease ends',
      );
    }
  }
  return result;
}

export async function reconcileCycle(
  context: AccountContext,
  cycle: Cycle,
  now: Date,
  signal?: AbortSignal,
): Promise<ReconcileVerdict> {
  const quote = await quoteOf(context, cycle);
  const fingerprint = fingerprintOf(quote);
  if (cycle.serviceOrderId !== null) {
    // The service answered with this id but the cycle could not record it: confirm and adopt.
    const detail = await context.account.client.getOrder(cycle.serviceOrderId, { signal });
    return adopt(context, cycle, fingerprint, toServiceOrder(cycle.account, detail));
  }

  const { quoteWindowMs, reconcile } = context.settings;
  const sentAt = (cycle.submittedAt ?? cycle.updatedAt).getTime();
  const listing = await listOrdersBetween(
    context,
    {
      symbol: quote.symbol,
      from: new Date(quote.requestedAt.getTime() - reconcile.clockSkewMs),
      to: new Date(sentAt + quoteWindowMs + reconcile.clockSkewMs),
    },
    { signal },
  );
  const listed = listing.orders;
  const candidates = await confirmCandidates(context, cycle, fingerprint, listed, signal);
  // From part of the list only an order carrying our quoteId decides anything: a match on figures alone
  // could be outranked, or joined, by an order on the pages not read.
  const decisive = listing.complete
    ? candidates
    : candidates.filter((candidate) => candidate.quoteId === fingerprint.quoteId);
  const verdict = matchOrders(fingerprint, decisive);
  if (verdict.kind === 'single') {
    const chosen = candidates.find((candidate) => candidate.id === verdict.orderId)!;
    return adopt(context, cycle, fingerprint, toServiceOrder(cycle.account, chosen.record, chosen.quoteId));
  }
  if (verdict.kind === 'ambiguous') return haltStrategy(context, cycle, verdict.orderIds);
  if (now.getTime() < sentAt + quoteWindowMs + reconcile.visibilityLagMs) return 'waiting';
  if (!listing.complete) return unproven(context, cycle, listing);
  const moved = await withDatabase(context, 'cycle_transition', () =>
    context.database.cycles.transition(cycle.id, 'unsure', 'not_placed', {
      reasonCode: 'not_found_at_service',
    }),
  );
  if (!moved) return 'waiting';
  context.metrics.reconciledCycles.inc({ result: 'not_placed' });
  context.metrics.unsureCycles.dec();
  context.logger.info(
    { cycleId: cycle.id, strategy: cycle.strategy, slot: cycle.slot, quoteId: quote.quoteId },
    'reconciled: no order at the service, the cycle placed nothing',
  );
  return 'not_placed';
}

async function quoteOf(context: AccountContext, cycle: Cycle): Promise<QuoteRecord> {
  const quotes = await withDatabase(context, 'quotes_for_cycle', () =>
    context.database.quotes.forCycle(cycle.id),
  );
  const quote = quotes.find((candidate) => candidate.id === cycle.quoteRecordId);
  // An intent is only ever committed with its quote; a cycle without one is corrupt, not unsure.
  if (!quote) throw new Error(`unsure cycle ${cycle.id} has no quote record`);
  return quote;
}

/**
 * Listed orders that may be the cycle's and that no other cycle owns, each with the quoteId the service
 * reports: every order listed with our quoteId, and every order listed without one whose figures fit the
 * quote within the quote checks' tolerance, asked for its quoteId with GET /client/orders/:id.
 */
async function confirmCandidates(
  context: AccountContext,
  cycle: Cycle,
  fingerprint: CycleFingerprint,
  listed: readonly OrderListItem[],
  signal?: AbortSignal,
): Promise<Candidate[]> {
  const candidates: Candidate[] = [];
  const tolerancePct = context.tolerances.costMismatchPct;
  for (const order of listed) {
    const mayBeOurs =
      order.quoteId !== undefined
        ? order.quoteId === fingerprint.quoteId
        : figuresFit(fingerprint, order, tolerancePct);
    if (!mayBeOurs) continue;
    const known = await withDatabase(context, 'orders_get_by_service_id', () =>
      context.database.orders.getByServiceId(cycle.account, order.id),
    );
    if (known && known.cycleId !== null && known.cycleId !== cycle.id) continue;
    // Listed without its quoteId: the detail tells, and its figures are the ones to record.
    const record =
      order.quoteId === undefined ? await context.account.client.getOrder(order.id, { signal }) : order;
    const quoteId = record.quoteId;
    if (quoteId !== undefined && quoteId !== fingerprint.quoteId) continue;
    candidates.push({
      id: record.id,
      symbol: record.symbol,
      amount: record.amount,
      price: record.price,
      ...(quoteId === undefined ? {} : { quoteId }),
      record,
    });
  }
  return candidates;
}

/** A candidate with the record it was judged on (the listed item, or the detail asked for its quoteId). */
interface Candidate extends CandidateOrder {
  record: OrderListItem | OrderDetail;
}

async function adopt(
  context: AccountContext,
  cycle: Cycle,
  fingerprint: CycleFingerprint,
  order: ReturnType<typeof toServiceOrder>,
): Promise<ReconcileVerdict> {
  const { database, metrics } = context;
  const discrepancy = figureDifferences(fingerprint, order);
  const { order: recorded, cycle: moved } = await withDatabase(context, 'order_record', () =>
    database.orders.recordPlacedWithCycle(
      cycle.id,
      order,
      { from: 'unsure', reasonCode: 'reconciled', discrepancy },
      { source: 'reconcile' },
    ),
  );
  if (recorded.cycleId !== cycle.id) {
    context.logger.error(
      { cycleId: cycle.id, orderId: order.id, ownerCycleId: recorded.cycleId },
      'reconciliation matched an order another cycle owns; leaving the cycle unsure',
    );
    return 'waiting';
  }
  if (!moved) return 'waiting';
  if (discrepancy.length > 0) reportDiscrepancy(context, moved, order.id, discrepancy);
  metrics.reconciledCycles.inc({ result: 'adopted' });
  metrics.unsureCycles.dec();
  context.logger.info(
    {
      cycleId: cycle.id,
      strategy: cycle.strategy,
      slot: cycle.slot,
      orderId: order.id,
      quoteId: cycle.quoteId,
    },
    'reconciled: the order exists at the service and is now recorded',
  );
  return 'adopted';
}

/** Absence is proven by a complete list only: with pages left unread the cycle stays unsure. */
function unproven(context: AccountContext, cycle: Cycle, listing: OrderListing): ReconcileVerdict {
  context.metrics.orderListsTruncated.inc({ scan: 'reconcile' });
  context.logger.warn(
    {
      cycleId: cycle.id,
      strategy: cycle.strategy,
      slot: cycle.slot,
      pagesRead: listing.pagesRead,
      totalPages: listing.totalPages,
    },
    'reconciliation read only part of the order list (engine.reconcile.maxPages); absence not proven, the cycle stays unsure',
  );
  return 'waiting';
}

async function haltStrategy(
  context: AccountContext,
  cycle: Cycle,
  orderIds: string[],
): Promise<ReconcileVerdict> {
  const reason = `reconciliation of cycle ${cycle.id} (slot ${cycle.slot.toISOString()}) found ${orderIds.length} matching orders: ${orderIds.join(', ')}`;
  await withDatabase(context, 'strategies_halt', () =>
    context.database.strategies.halt(cycle.strategy, reason),
  );
  context.metrics.reconciledCycles.inc({ result: 'ambiguous' });
  context.logger.error(
    { alert: 'strategy_halted', strategy: cycle.strategy, cycleId: cycle.id, orderIds },
    'ALERT: ambiguous reconciliation; automation of this strategy is halted until an operator clears it',
  );
  return 'ambiguous';
}

/** The order is recorded and the strategy halted (same transaction); this makes it seen. */
export function reportDiscrepancy(
  context: EngineContext,
  cycle: Cycle,
  orderId: string,
  discrepancy: readonly FigureDifference[],
): void {
  context.metrics.discrepancies.inc();
  context.logger.error(
    { alert: 'discrepancy', strategy: cycle.strategy, cycleId: cycle.id, orderId, discrepancy },
    'ALERT: the service reports our order with figures we did not ask for; recorded, and the strategy is halted until an operator clears it',
  );
}
