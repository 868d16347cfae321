/**
 * The notifications the repositories write with the facts they report, built from the rows they just
 * wrote. Each hook in a repository is one call: `outbox.enqueue(tx, <builder>(...))`, inside the
 * transaction of the fact. Money is decimal text; a message repeated by a retried write or by several
 * replicas carries a key, so it is written once.
 */
import { type Decimal, toDecimalText } from '../../money.js';
import type { NotificationEvent, NotificationType } from '../../notify/event-types.js';
import type { DrizzleExecutor } from '../connection.js';
import type { cycles, orders } from '../schema.js';
import type { ControlState, FigureDifference } from '../types.js';

type CycleRow = typeof cycles.$inferSelect;
type OrderRow = typeof orders.$inferSelect;

/** What a repository needs of the outbox: writing in the caller's transaction. */
export interface Outbox {
  enqueue(executor: DrizzleExecutor, events: readonly NotificationEvent[]): Promise<number>;
  /**
   * Whether messages of this type are written at all (a channel is routed to it): a fact nobody is told
   * about needs no transaction around it for its message, and can be written in one statement.
   */
  announces(type: NotificationType): boolean;
}

/** An outbox that writes nothing: repositories built without notifications (tests, tools). */
export const NO_OUTBOX: Outbox = { enqueue: async () => 0, announces: () => false };

const BUDGET_REASONS = new Set(['budget_day_exceeded', 'budget_month_exceeded']);
const GUARD_REASONS = new Set(['credit_available_below_min', 'credit_used_pct_above_max', 'cannot_withdraw']);

const money = (value: Decimal | null) => (value === null ? null : toDecimalText(value));

function cycleData(cycle: CycleRow) {
  return {
    strategy: cycle.strategy,
    cycleId: cycle.id,
    slot: cycle.slot.toISOString(),
    state: cycle.state,
    reason: cycle.reasonCode,
    errorCode: cycle.errorCode,
    error: cycle.errorMessage,
    quoteId: cycle.quoteId,
    amount: money(cycle.amount),
    price: money(cycle.price),
    totalCost: money(cycle.totalCost),
  };
}

/** `YYYY-MM` or `YYYY-MM-DD` (UTC) of the instant: the period a repeated block is announced once in. */
function periodOf(instant: Date, reason: string): string {
  const iso = instant.toISOString();
  return reason === 'budget_month_exceeded' ? iso.slice(0, 7) : iso.slice(0, 10);
}

/** Whether a move to `state` with `reason` is news: those moves are written with their message. */
export function announcesMove(state: string, reason: string | null | undefined): boolean {
  if (state === 'failed' || state === 'unsure') return true;
  return state === 'skipped' && (BUDGET_REASONS.has(reason ?? '') || GUARD_REASONS.has(reason ?? ''));
}

/** The news of a cycle that just moved: failed, unsure, or skipped by a budget or a guard. */
export function cycleMoved(cycle: CycleRow): NotificationEvent[] {
  const base = { subject: `strategy:${cycle.strategy}`, occurredAt: cycle.updatedAt, data: cycleData(cycle) };
  if (cycle.state === 'failed') return [{ ...base, type: 'order_failed' }];
  if (cycle.state === 'unsure') return [{ ...base, type: 'cycle_unsure' }];
  const reason = cycle.reasonCode ?? '';
  if (cycle.state !== 'skipped' || !(BUDGET_REASONS.has(reason) || GUARD_REASONS.has(reason))) return [];
  const type = BUDGET_REASONS.has(reason) ? 'budget_reached' : 'guard_blocked';
  // Once per strategy, reason and period, not on every cycle the block repeats.
  return [{ ...base, type, key: `${type}_${cycle.strategy}_${reason}_${periodOf(cycle.updatedAt, reason)}` }];
}

/** A placed order, and when its figures differ from the request, the discrepancy that halted the strategy. */
export function orderPlaced(
  cycle: CycleRow,
  serviceOrderId: string,
  differences: readonly FigureDifference[],
): NotificationEvent[] {
  const base = { subject: `order:${serviceOrderId}`, occurredAt: cycle.updatedAt };
  const data = { ...cycleData(cycle), orderId: serviceOrderId };
  const placed: NotificationEvent = { ...base, type: 'order_placed', data };
  if (differences.length === 0) return [placed];
  return [
    placed,
    {
      ...base,
      type: 'discrepancy',
      data: { ...data, differences: differences.map((difference) => ({ ...difference })) },
    },
    {
      subject: `strategy:${cycle.strategy}`,
      occurredAt: cycle.updatedAt,
      type: 'strategy_halted',
      data: { strategy: cycle.strategy, reason: 'discrepancy', orderId: serviceOrderId },
    },
  ];
}

export function strategyHalted(name: string, reason: string, haltedAt: Date): NotificationEvent[] {
  return [
    {
      type: 'strategy_halted',
      subject: `strategy:${name}`,
      occurredAt: haltedAt,
      data: { strategy: name, reason },
      // A strategy halted again while halted keeps its first halt: one message.
      key: `strategy_halted_${name}_${haltedAt.getTime()}`,
    },
  ];
}

export function killSwitchChanged(state: ControlState): NotificationEvent[] {
  return [
    {
      type: 'kill_switch',
      subject: 'kill_switch',
      occurredAt: state.changedAt ?? new Date(),
      data: { paused: state.paused, reason: state.reason, by: state.changedBy },
    },
  ];
}

function orderData(order: OrderRow) {
  return {
    orderId: order.serviceOrderId,
    status: order.status,
    symbol: order.symbol,
    amount: money(order.amount),
    price: money(order.price),
    receivedAmount: money(order.receivedAmount),
    withdrawnAmount: money(order.withdrawnAmount),
  };
}

export function orderSettled(order: OrderRow): NotificationEvent[] {
  return [
    {
      type: 'order_settled',
      subject: `order:${order.serviceOrderId}`,
      occurredAt: order.updatedAt,
      data: orderData(order),
      key: `order_settled_${order.id}`,
    },
  ];
}

export function settlementStuck(order: OrderRow): NotificationEvent[] {
  const flagged = order.stuckFlaggedAt ?? order.updatedAt;
  return [
    {
      type: 'settlement_stuck',
      subject: `order:${order.serviceOrderId}`,
      occurredAt: flagged,
      data: { ...orderData(order), lastProgressAt: order.lastProgressAt.toISOString() },
      // Flagged once until the order moves again (which clears the flag).
      key: `settlement_stuck_${order.id}_${flagged.getTime()}`,
    },
  ];
}

export function replicasLost(ids: readonly string[], at: Date): NotificationEvent[] {
  return ids.map((id) => ({
    type: 'replica_lost',
    subject: `replica:${id}`,
    occurredAt: at,
    data: { replica: id },
    key: `replica_lost_${id}`,
  }));
}

/** A cycle parked for people: what it would buy, at what price, by when it must be approved. */
export function approvalNeeded(
  cycle: CycleRow,
  request: { approversRequired: number; expiresAt: Date; defaultMaxPrice: Decimal },
): NotificationEvent[] {
  return [
    {
      type: 'approval_needed',
      subject: `cycle:${cycle.id}`,
      occurredAt: cycle.updatedAt,
      data: {
        ...cycleData(cycle),
        approversRequired: request.approversRequired,
        expiresAt: request.expiresAt.toISOString(),
        defaultMaxPrice: toDecimalText(request.defaultMaxPrice),
      },
    },
  ];
}

/** A parked cycle approved (by its last approver), rejected, or expired. */
export function approvalDecided(
  cycle: CycleRow,
  decision: {
    decision: 'approved' | 'rejected' | 'expired';
    by: readonly string[];
    reason: string | null;
    maxPrice: Decimal | null;
  },
): NotificationEvent[] {
  return [
    {
      type: 'approval_decided',
      subject: `cycle:${cycle.id}`,
      occurredAt: cycle.updatedAt,
      data: {
        ...cycleData(cycle),
        decision: decision.decision,
        by: [...decision.by],
        decisionReason: decision.reason,
        approvedMaxPrice: money(decision.maxPrice),
      },
    },
  ];
}
