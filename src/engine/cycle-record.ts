import type {
  Cycle,
  CyclePatch,
  CycleState,
  IntentDecision,
  IntentResult,
  QuoteInput,
  QuoteRecord,
} from '../db/index.js';
import { errorCodeOf, messageOf } from '../errors.js';
import type { EngineContext } from './context.js';
import { EngineError, withDatabase } from './engine-errors.js';

/**
 * One cycle's row as this process last saw it, moved only by compare-and-set. A miss means another
 * process moved it (recovery declared us dead, or a reconciliation adopted it): the cycle must stop
 * acting, in particular it must not send an order.
 */
export class CycleRecord {
  /**
   * Set the moment the order request is handed to the client: until then nothing of this cycle left the
   * process, so a `submitting` row it leaves behind is settled as not placed, never unsure.
   */
  orderSent = false;

  constructor(
    private readonly context: EngineContext,
    private current: Cycle,
  ) {}

  get cycle(): Cycle {
    return this.current;
  }

  get state(): CycleState {
    return this.current.state;
  }

  async move(to: CycleState, patch: CyclePatch = {}): Promise<Cycle> {
    const { id, state: from } = this.current;
    const next = await withDatabase(this.context, 'cycle_transition', () =>
      this.context.database.cycles.transition(id, from, to, patch),
    );
    if (next === null) {
      throw new EngineError(
        'STATE_CONFLICT',
        `cycle ${id} is no longer '${from}' (another process moved it), so it cannot move to '${to}'`,
      );
    }
    this.current = next;
    return next;
  }

  /** Takes a row another repository call returned (e.g. the order and placed move in one transaction). */
  replace(cycle: Cycle): void {
    this.current = cycle;
  }

  /** Reads the row again, after a compare-and-set miss showed that someone else moved it. */
  async reload(): Promise<Cycle> {
    const fresh = await withDatabase(this.context, 'cycle_get', () =>
      this.context.database.cycles.get(this.current.id),
    );
    if (fresh) this.current = fresh;
    return this.current;
  }

  async recordQuote(quote: QuoteInput): Promise<QuoteRecord> {
    return withDatabase(this.context, 'quote_record', () =>
      this.context.database.quotes.record(this.current.id, quote),
    );
  }

  /**
   * Commits the intent to place an order on this quote: after this the cycle is `submitting` and counts as
   * money that may have left, or, when the decision taken again under the locks says so, `skipped` or parked.
   * `failed`: the commit was cut by the time limit and had not landed (the row says so). Throws when it could
   * not be committed, and then no order may be sent.
   */
  async commitIntent(
    quote: QuoteInput,
    decision: IntentDecision,
    timeoutMs: number,
  ): Promise<IntentResult['action'] | 'failed'> {
    const { id, state: from } = this.current;
    if (from !== 'claimed' && from !== 'quoted') {
      throw new EngineError('STATE_CONFLICT', `cycle ${id} is '${from}', an intent needs claimed or quoted`);
    }
    let result: IntentResult;
    try {
      result = await withDatabase(
        this.context,
        'cycle_commit_intent',
        () => this.context.database.cycles.commitIntent({ id, from, quote }, decision),
        timeoutMs,
      );
    } catch (error) {
      if (errorCodeOf(error) !== 'DB_TIMEOUT') throw error;
      return this.readBackIntent(from, quote.quoteId, error);
    }
    if (result.cycle === null) {
      throw new EngineError(
        'STATE_CONFLICT',
        `cycle ${id} is no longer '${from}' (another process moved it)`,
      );
    }
    this.current = result.cycle;
    return result.action;
  }

  /**
   * A commit cut by our time limit has an unknown outcome: it may have landed, or may land later. The row
   * says which, and the cycle goes on from it: the intent on this quote landed (go on as committed; the
   * caller still checks the deadline), or the re-check's skip or park did. A row still where the move
   * starts is moved out of it (failed), so that a late landing finds nothing to move and no order leaves;
   * when that move misses, the intent landed in between, and the row is read once more.
   */
  private async readBackIntent(
    from: 'claimed' | 'quoted',
    quoteId: string,
    cut: unknown,
  ): Promise<IntentResult['action'] | 'failed'> {
    for (let read = 1; ; read++) {
      const fresh = await this.reload();
      if (fresh.state === 'submitting' && fresh.quoteId === quoteId) return 'commit';
      if (fresh.state === 'skipped') return 'skip';
      if (fresh.state === 'awaiting_approval') return 'park';
      if (fresh.state !== from || read > 1) {
        throw new EngineError(
          'STATE_CONFLICT',
          `cycle ${fresh.id} is '${fresh.state}' after its intent's commit was cut (another process moved it)`,
        );
      }
      try {
        await this.move('failed', {
          reasonCode: 'database_timeout',
          errorCode: 'DB_TIMEOUT',
          errorMessage: `the intent's commit was cut by the time limit before it landed: ${messageOf(cut)}`,
        });
        return 'failed';
      } catch (error) {
        if (errorCodeOf(error) !== 'STATE_CONFLICT') throw error;
      }
    }
  }

  /** Moves from claimed to a final state through `quoted` when the final state needs it (dry_run). */
  async finishWithQuote(to: 'skipped' | 'dry_run' | 'failed', quote: QuoteRecord, patch: CyclePatch) {
    if (to === 'dry_run' && this.state === 'claimed') await this.move('quoted', { quote });
    return this.move(to, { ...patch, quote });
  }
}
