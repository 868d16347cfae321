/**
 * What a person does from the web console, each action and its audit row in one transaction: the kill
 * switch, pausing and resuming one strategy (the halt the engine already honours), and settling an unsure
 * cycle as "not placed". The same refusals as the command line apply (operator-actions.ts in the engine).
 */
import { and, count, eq } from 'drizzle-orm';
import type { DrizzleHandle } from '../connection.js';
import { cycles } from '../schema.js';
import type { ControlState, CycleState, StrategyRecord } from '../types.js';
import { appendAudit } from './audit.js';
import { createControlRepository } from './control.js';
import type { Outbox } from './notification-events.js';
import { createStrategiesRepository } from './strategies.js';

export type ConsoleActionErrorCode =
  | 'STRATEGY_NOT_FOUND'
  | 'STRATEGY_HAS_UNSURE_CYCLES'
  | 'CYCLE_NOT_FOUND'
  | 'CYCLE_NOT_UNSURE';

export class ConsoleActionError extends Error {
  override readonly name = 'ConsoleActionError';
  constructor(
    readonly code: ConsoleActionErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** The reason code of a cycle settled by hand (the engine's OPERATOR_REASON). */
const OPERATOR_REASON = 'operator_resolved';

export interface ConsoleActions {
  pauseAll(actor: string, reason: string | null): Promise<ControlState>;
  resumeAll(actor: string): Promise<ControlState>;
  pauseStrategy(name: string, actor: string, reason: string | null): Promise<StrategyRecord>;
  /** Refused while the strategy has unsure cycles: each must be settled first. */
  resumeStrategy(name: string, actor: string): Promise<StrategyRecord>;
  /** Settles an unsure cycle as "no order was placed". */
  declareNotPlaced(cycleId: number, actor: string): Promise<void>;
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

    declareNotPlaced: (cycleId, actor) =>
      db.transaction(async (transaction) => {
        const [found] = await transaction
          .select({ state: cycles.state, strategy: cycles.strategy })
          .from(cycles)
          .where(eq(cycles.id, cycleId));
        if (!found) throw new ConsoleActionError('CYCLE_NOT_FOUND', `no cycle with id ${cycleId}`);
        const now = clock();
        const moved = await transaction
          .update(cycles)
          .set({
            state: 'not_placed',
            reasonCode: OPERATOR_REASON,
            updatedAt: now,
            finishedAt: now,
            leaseOwner: null,
            leaseUntil: null,
          })
          .where(and(eq(cycles.id, cycleId), eq(cycles.state, 'unsure')))
          .returning({ id: cycles.id });
        if (moved.length === 0) {
          throw new ConsoleActionError(
            'CYCLE_NOT_UNSURE',
            `cycle ${cycleId} is '${found.state}', not unsure: nothing to settle`,
          );
        }
        await appendAudit(
          transaction,
          {
            actor,
            action: 'cycle.reconcile',
            subject: `cycle:${cycleId}`,
            before: { state: 'unsure', strategy: found.strategy },
            after: { state: 'not_placed', reasonCode: OPERATOR_REASON },
          },
          now,
        );
      }),
  };
}
