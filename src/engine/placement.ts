/**
 * The quote → decide → intent → order step of a cycle, repeated with a fresh quote when the service says
 * the quote expired or it passed our own deadline (at most `maxFreshQuotes` times). Between the quote's
 * arrival and the order request there is only the pure decision, a cached kill-switch read and the intent
 * commit: nothing else may eat into the quote's five seconds. The commit is not started when less than
 * `intentReserveMs` of the window is left, and one cut by the time limit is read back (cycle-record.ts).
 */
import {
  ApiRateLimitedError,
  formatFxRate,
  isPurchaseApiError,
  type Order,
  type Quote,
  QuoteExpiredError,
} from '../api/index.js';
import type { QuoteInput } from '../db/index.js';
import { errorCodeOf, messageOf } from '../errors.js';
import { withTimeLimit } from '../runtime/time-limit.js';
import { evaluateQuote, isTarget, resizeForQuote, type Strategy } from '../strategy/index.js';
import type { AccountContext } from './context.js';
import type { CycleInputs } from './cycle-inputs.js';
import type { CycleRecord } from './cycle-record.js';
import { startQuoteDeadline } from './deadline.js';
import { withDatabase } from './engine-errors.js';
import { type ApprovalState, commitIntent, traceAsJson } from './intent.js';
import { fingerprintOf } from './order-matching.js';
import type { EngineReason } from './outcomes.js';
import { recordPlacedOrder } from './record-placed.js';

export interface CycleTiming {
  quotes: number;
  quoteMs: number | null;
  quoteToOrderMs: number | null;
}

/** Why an attempt gave its quote up; the slot may take a fresh one. */
interface GiveUp {
  reason: EngineReason;
  errorCode: string;
  errorMessage: string;
}

/** One cycle's placement: what every quote attempt of the slot reads and records. */
export interface Placement {
  context: AccountContext;
  /** With the slot's amount: a target's sized slice (cycle.ts), which one resize may change. */
  strategy: Strategy;
  /** A target's slice was quoted again at the size a quote's price called for: once per slot. */
  resized: boolean;
  record: CycleRecord;
  inputs: CycleInputs;
  timing: CycleTiming;
  approval: ApprovalState;
}

export async function placeWithFreshQuotes(placement: Placement): Promise<void> {
  const { context, strategy, record, timing } = placement;
  const maxQuotes = 1 + context.settings.maxFreshQuotes;
  for (let quoteNumber = 1; ; quoteNumber++) {
    timing.quotes = quoteNumber + (placement.resized ? 1 : 0);
    const gaveUp = await attemptWithOneQuote(placement);
    if (gaveUp === undefined) return;
    if (quoteNumber >= maxQuotes) {
      await record.move('failed', {
        reasonCode: gaveUp.reason,
        errorCode: gaveUp.errorCode,
        errorMessage: gaveUp.errorMessage,
      });
      return;
    }
    context.logger.info(
      { strategy: strategy.name, slot: record.cycle.slot, reason: gaveUp.reason, quoteNumber },
      'quote given up; asking for a fresh one within the same slot',
    );
  }
}

async function attemptWithOneQuote(placement: Placement): Promise<GiveUp | undefined> {
  const { context, record, inputs, timing, approval } = placement;
  const { strategy } = placement;
  const { clock, metrics, settings } = context;
  const client = context.account.tradingClient ?? context.account.client;
  const requestedAt = clock();
  const deadline = startQuoteDeadline(requestedAt, settings);
  const requestTick = performance.now();
  let quote: Quote;
  try {
    quote = await client.getQuote(
      { symbol: strategy.symbol, amount: strategy.amount },
      { signal: deadline.signal },
    );
  } catch (error) {
    timing.quoteMs = performance.now() - requestTick;
    deadline.release();
    if (deadline.signal.aborted || deadline.hasPassed(clock())) {
      return lateQuote(context, strategy, `no quote before the local deadline: ${messageOf(error)}`);
    }
    if (!isPurchaseApiError(error)) throw error;
    await record.move('failed', {
      reasonCode: 'quote_unavailable',
      errorCode: error.code,
      errorMessage: messageOf(error),
    });
    return undefined;
  }
  deadline.release();
  const receivedAt = clock();
  const receivedTick = performance.now();
  timing.quoteMs = receivedTick - requestTick;
  const quoteInput: QuoteInput = {
    quoteId: quote.quoteId,
    symbol: quote.symbol,
    // The wire quote has no amount: it is the amount this cycle asked for.
    amount: strategy.amount,
    price: quote.price,
    totalCost: quote.totalCost,
    totalFilled: quote.totalFilled,
    expiresIn: quote.expiresIn ?? null,
    requestedAt,
    receivedAt,
    deadlineAt: deadline.deadlineAt,
  };
  if (deadline.hasPassed(receivedAt)) {
    // Kept for the audit trail, never used.
    await record.recordQuote(quoteInput);
    return lateQuote(context, strategy, LATE_FOR_THE_ORDER);
  }
  if (isTarget(strategy) && inputs.target && approval === undefined && !placement.resized) {
    const amount = resizeForQuote(strategy, inputs.target, quoteInput);
    if (amount !== undefined) {
      // Kept for the audit trail and the window's quote average; the slot quotes the right size instead.
      await record.recordQuote(quoteInput);
      context.logger.info(
        {
          strategy: strategy.name,
          slot: record.cycle.slot,
          quoted: quoteInput.amount,
          amount,
          price: quote.price,
        },
        "target slice sized again on the quote's price",
      );
      placement.resized = true;
      placement.strategy = { ...strategy, amount };
      timing.quotes++;
      return attemptWithOneQuote(placement);
    }
  }

  const decision = evaluateQuote({
    strategy,
    now: receivedAt,
    quote: { ...quoteInput },
    balance: inputs.balance,
    spent: inputs.spent,
    lastSubmittedAt: inputs.lastSubmittedAt,
    tolerances: context.tolerances,
    ...(inputs.target === undefined ? {} : { target: inputs.target }),
    ...(approval === undefined ? {} : { approvedMaxPrice: approval.approvedMaxPrice }),
  });
  const decided = { trace: traceAsJson(decision.trace), balanceSnapshotId: inputs.balanceSnapshotId ?? null };
  if (decision.action === 'skip') {
    const stored = await record.recordQuote(quoteInput);
    await record.finishWithQuote('skipped', stored, { ...decided, reasonCode: decision.reason });
    return undefined;
  }
  if (strategy.dryRun || context.dryRun) {
    const stored = await record.recordQuote(quoteInput);
    await record.finishWithQuote('dry_run', stored, { ...decided, reasonCode: 'ok' });
    return undefined;
  }
  let fxRate: string;
  try {
    fxRate = formatFxRate(quote.price);
  } catch (error) {
    const stored = await record.recordQuote(quoteInput);
    const failure = {
      reasonCode: 'quote_unusable',
      errorCode: errorCodeOf(error),
      errorMessage: messageOf(error),
    };
    await record.finishWithQuote('failed', stored, { ...decided, ...failure });
    return undefined;
  }
  if (await withDatabase(context, 'kill_switch', () => context.killSwitch.isPaused())) {
    const stored = await record.recordQuote(quoteInput);
    await record.finishWithQuote('skipped', stored, { ...decided, reasonCode: 'paused' });
    return undefined;
  }

  // Decided before the write, not after: a commit the window cannot hold would only leave a `submitting`
  // row to undo. The order's own travel is in the deadline's margin.
  const untilDeadline = deadline.deadlineAt.getTime() - clock().getTime();
  if (untilDeadline < settings.intentReserveMs) {
    await record.recordQuote(quoteInput);
    return lateQuote(
      context,
      strategy,
      `${Math.max(0, Math.round(untilDeadline))} ms of the quote's window were left, less than the intent needs (engine.intentReserveMs)`,
    );
  }
  // Fail closed: if this throws, no order request leaves.
  // No longer than the quote stays usable: a commit that lands later could not be acted on anyway.
  const commitTimeoutMs = Math.min(untilDeadline, settings.databaseTimeoutMs);
  const committed = await commitIntent(
    context,
    strategy,
    record,
    quoteInput,
    inputs,
    decided,
    commitTimeoutMs,
    approval,
  );
  if (committed !== 'commit') return undefined;
  if (deadline.hasPassed(clock())) {
    const late = lateQuote(context, strategy, LATE_FOR_THE_ORDER);
    await record.move('quoted', { errorCode: late.errorCode, errorMessage: late.errorMessage });
    return late;
  }

  const sendTick = performance.now();
  timing.quoteToOrderMs = sendTick - receivedTick;
  metrics.quoteToOrder.observe(timing.quoteToOrderMs / 1000);
  let order: Order;
  record.orderSent = true;
  try {
    order = await withTimeLimit(settings.orderTimeoutMs, (signal) =>
      client.createOrder({ quoteId: quote.quoteId, fxRate }, { signal }),
    );
  } catch (error) {
    return settleFailedOrder(context, strategy, record, error);
  }
  await recordPlacedOrder(context, record, order, fingerprintOf(quoteInput));
  return undefined;
}

const LATE_FOR_THE_ORDER = 'the quote passed the local deadline before the order could be sent';

function lateQuote(context: AccountContext, strategy: Strategy, errorMessage: string): GiveUp {
  context.metrics.quotesExpired.inc({ strategy: strategy.name, where: 'local' });
  return { reason: 'quote_deadline_exceeded', errorCode: 'QUOTE_DEADLINE', errorMessage };
}

/**
 * An order request that failed. Only a definite refusal or a request that never left ends the cycle as
 * failed; anything else may have created the order and makes the cycle unsure. It is never re-sent.
 */
async function settleFailedOrder(
  context: AccountContext,
  strategy: Strategy,
  record: CycleRecord,
  error: unknown,
): Promise<GiveUp | undefined> {
  const errorCode = errorCodeOf(error);
  const errorMessage = messageOf(error);
  if (error instanceof QuoteExpiredError) {
    context.metrics.quotesExpired.inc({ strategy: strategy.name, where: 'service' });
    await record.move('quoted', { errorCode, errorMessage });
    return { reason: 'quote_expired', errorCode, errorMessage };
  }
  if (error instanceof ApiRateLimitedError) {
    // Turned away before any work: nothing was placed. A fresh quote once the pause is over, if the slot's
    // attempts allow; the gate holds the next request until then, and the quote's deadline still rules.
    await record.move('quoted', { errorCode, errorMessage });
    return { reason: 'rate_limited', errorCode, errorMessage };
  }
  if (isPurchaseApiError(error) && !error.outcomeUnknown) {
    const reasonCode = error.code === 'API_UNAVAILABLE' ? 'order_not_sent' : 'order_rejected';
    await record.move('failed', { reasonCode, errorCode, errorMessage });
    return undefined;
  }
  await record.move('unsure', { reasonCode: 'outcome_unknown', errorCode, errorMessage });
  context.metrics.unsureCycles.inc();
  return undefined;
}
