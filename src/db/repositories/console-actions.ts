/**
 * What a person does from the web console, each action and its audit row in one transaction: the kill
 * switch, pausing and resuming one strategy (the halt the engine already honours), and acknowledging an
 * external order. The same refusals as the command line apply (operator-actions.ts in the engine); settling
 * an unsure cycle is the engine's own operation (resolveUnsureCycle), which writes its audit row itself.
 */
import { and, count, eq } from 'drizzle-orm';
import { DEFAULT_ACCOUNT } from '../../strategy/index.js';
import type { DrizzleHandle } from '../connection.js';
import { auditLog, cycles, orders } from '../schema.js';
import type { ControlState, CycleState, StrategyRecord } from '../types.js';
import { appendAudit } from './audit.js';
import { createControlRepository } from './control.js';
import type { Outbox } from './notification-events.js';
import { createStrategiesRepository } from './strategies.js';

export type ConsoleActionErrorCode =
  | 'STRATEGY_NOT_FOUND'
  | 'STRATEGY_HAS_UNSURE_CYCLES'
  | 'ORDER_NOT_FOUND'
  | 'ORDER_NOT_EXTERNAL'
  | 'ORDER_ALREADY_ACKNOWLEDGED';

/**
 * The audit subject of an order: what acknowledgements are found by. An order id is unique only within its
 * account, so the account is part of it, but for `default`'s orders, whose subjects were written before
 * several accounts and must still be found. Neither an account name nor an order id holds a colon.
 */
export const orderSubject = (account: string, serviceOrderId: string) =>
  account === DEFAULT_ACCOUNT ? `order:${serviceOrderId}` : `order:${account}:${serviceOrderId}`;

export class ConsoleActionError extends Error {
  override readonly name = 'ConsoleActionError';
  constructor(
    readonly code: ConsoleActionErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export interface ConsoleActions {
  pauseAll(actor: string, reason: string | null): Promise<ControlState>;
  resumeAll(actor: string): Promise<ControlState>;
  pauseStrategy(name: string, actor: string, reason: string | null): Promise<StrategyRecord>;
  /** Refused while the strategy has unsure cycles: each must be settled first. */
  resumeStrategy(name: string, actor: string): Promise<StrategyRecord>;
  /**
   * A person's word that an external order (at the service, placed by no cycle) is known to them: placed by
   * hand, say. The order stays booked as it is; the audit row is the acknowledgement (the Attention page
   * reads it back), written once.
   */
  acknowledgeExternalOrder(
    order: { account: string; serviceOrderId: string },
    actor: string,
    note: string | null,
  ): Promise<void>;
}

/** `outbox`: the notifications the engine's repositories write with the same facts (kill switch, halts). */
export function createConsoleActions(db: DrizzleHandle, clock: () => Date, outbox: Outbox): ConsoleActions {
  const killSwitch = async (actor: string, paused: boolean, reason: string | null) =>
    db.transaction(async (transaction) => {
      const control = createControlRepository(transaction, clock, outbox);
      const before = await control.get();
      const after = paused ? await control.pause(reason, actor) : await control.resume(actor);
      const action = paused ? 'kill_switch.pause' : 'kill_switch.resume';
      await appendAudit(transaction, { actor, action, subject: 'kill_switch', before, after }, clock());
      return after;
    });

  const strategyIn = async (repository: ReturnType<typeof createStrategiesRepository>, name: string) => {
    const found = await repository.get(name);
    if (!found)
      throw new ConsoleActionError('STRATEGY_NOT_FOUND', `no strategy named "${name}" was ever recorded`);
    return found;
  };

  return {
    pauseAll: (actor, reason) => killSwitch(actor, true, reason),
    resumeAll: (actor) => killSwitch(actor, false, null),

    pauseStrategy: (name, actor, reason) =>
      db.transaction(async (transaction) => {
        const strategies = createStrategiesRepository(transaction, clock, outbox);
        const before = await strategyIn(strategies, name);
        const because = `paused by ${actor} in the console${reason ? `: ${reason}` : ''}`;
        const after = (await strategies.halt(name, because)) ?? before;
        const view = (s: StrategyRecord) => ({ haltedAt: s.haltedAt, haltReason: s.haltReason });
        await appendAudit(
          transaction,
          {
            actor,
            action: 'strategy.pause',
            subject: `strategy:${name}`,
            before: view(before),
            after: view(after),
          },
          clock(),
        );
        return after;
      }),

    resumeStrategy: (name, actor) =>
      db.transaction(async (transaction) => {
        const strategies = createStrategiesRepository(transaction, clock, outbox);
        const before = await strategyIn(strategies, name);
        const [unsure] = await transaction
          .select({ n: count() })
          .from(cycles)
          .where(and(eq(cycles.state, 'unsure' satisfies CycleState), eq(cycles.strategy, name)));
        if (unsure && unsure.n > 0) {
          throw new ConsoleActionError(
            'STRATEGY_HAS_UNSURE_CYCLES',
            `strategy "${name}" still has ${unsure.n} unsure cycle(s): settle each first (Attention page)`,
          );
        }
        const after = (await strategies.clearHalt(name)) ?? before;
        const view = (s: StrategyRecord) => ({ haltedAt: s.haltedAt, haltReason: s.haltReason });
        await appendAudit(
          transaction,
          {
            actor,
            action: 'strategy.resume',
            subject: `strategy:${name}`,
            before: view(before),
            after: view(after),
          },
          clock(),
        );
        return after;
      }),

    acknowledgeExternalOrder: ({ account, serviceOrderId }, actor, note) =>
      db.transaction(async (transaction) => {
        // Locked, so that two people acknowledging at once write one row, and a cycle adopting the order
        // meanwhile is seen.
        const [order] = await transaction
          .select({
            cycleId: orders.cycleId,
            symbol: orders.symbol,
            amount: orders.amount,
            price: orders.price,
            placedAt: orders.serviceTimestamp,
          })
          .from(orders)
          .where(and(eq(orders.account, account), eq(orders.serviceOrderId, serviceOrderId)))
          .for('update');
        if (!order) {
          throw new ConsoleActionError(
            'ORDER_NOT_FOUND',
            `no order ${serviceOrderId} of account ${account} is recorded`,
          );
        }
        if (order.cycleId !== null) {
          throw new ConsoleActionError(
            'ORDER_NOT_EXTERNAL',
            `order ${serviceOrderId} is cycle ${order.cycleId}'s, not external: nothing to acknowledge`,
          );
        }
        const subject = orderSubject(account, serviceOrderId);
        const [earlier] = await transaction
          .select({ actor: auditLog.actor, at: auditLog.at })
          .from(auditLog)
          .where(and(eq(auditLog.action, 'order.acknowledge'), eq(auditLog.subject, subject)))
          .limit(1);
        if (earlier) {
          throw new ConsoleActionError(
            'ORDER_ALREADY_ACKNOWLEDGED',
            `order ${serviceOrderId} was acknowledged by ${earlier.actor} at ${earlier.at.toISOString()}`,
          );
        }
        const { cycleId: _none, ...figures } = order;
        await appendAudit(
          transaction,
          {
            actor,
            action: 'order.acknowledge',
            subject,
            before: { origin: 'external', account, ...figures },
            after: { acknowledged: true, note },
          },
          clock(),
        );
      }),
  };
}
