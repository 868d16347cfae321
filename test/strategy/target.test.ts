import { describe, expect, it } from 'vitest';
import {
  evaluateBeforeQuote,
  evaluateQuote,
  planSlice,
  resizeForQuote,
  slotsLeft,
  type TargetProgress,
  targetStanding,
} from '../../src/strategy/index.js';
import { DEFAULT_QUOTE_TOLERANCES } from '../../src/strategy/rules-quote.js';
import { d, quoteFor, target } from './strategy-builders.js';

const START = Date.UTC(2031, 2, 3, 12, 0, 0);
const at = (seconds: number) => new Date(START + seconds * 1000);
const progress = (spent: string, received = '0', quoteAverage?: string): TargetProgress => ({
  spent: d(spent),
  received: d(received),
  ...(quoteAverage === undefined ? {} : { quoteAverage: d(quoteAverage) }),
});
const amountOf = (plan: ReturnType<typeof planSlice>) =>
  plan.action === 'buy' ? plan.amount.toFixed(2) : plan.reason;

describe('a target slot is sized from the record', () => {
  it('counts the slots left in the window, this one included, and stops counting at the cap', () => {
    const strategy = target();
    expect(slotsLeft(strategy, at(0))).toBe(24);
    expect(slotsLeft(strategy, at(115))).toBe(1);
    expect(slotsLeft(strategy, at(0), 5)).toBe(5);
  });

  it('buys remaining ÷ slots left: on the line from where it stands, rounded down to the cent', () => {
    const strategy = target();
    expect(amountOf(planSlice(strategy, { slot: at(0), progress: progress('0') }))).toBe('416.66');
    // Behind after skipped slots: 12 left for 7,000.00.
    expect(amountOf(planSlice(strategy, { slot: at(60), progress: progress('3000.00') }))).toBe('583.33');
  });

  it('within slice: at least min, at most max, and never more than is left (the last order may be smaller)', () => {
    const strategy = target();
    expect(amountOf(planSlice(strategy, { slot: at(0), progress: progress('9950.00') }))).toBe('50.00');
    expect(amountOf(planSlice(strategy, { slot: at(100), progress: progress('9500.00') }))).toBe('125.00');
    expect(amountOf(planSlice(strategy, { slot: at(5), progress: progress('9800.00') }))).toBe('100.00');
    expect(amountOf(planSlice(strategy, { slot: at(110), progress: progress('0') }))).toBe('1000.00');
  });

  it('the last slot sizes itself to finish, within slice.max', () => {
    const strategy = target();
    expect(amountOf(planSlice(strategy, { slot: at(115), progress: progress('9312.34') }))).toBe('687.66');
  });

  it('nothing outside the window, and nothing once only the last order rounding is left', () => {
    const strategy = target();
    expect(amountOf(planSlice(strategy, { slot: at(-5), progress: progress('0') }))).toBe(
      'target_outside_window',
    );
    expect(amountOf(planSlice(strategy, { slot: at(120), progress: progress('0') }))).toBe(
      'target_outside_window',
    );
    expect(amountOf(planSlice(strategy, { slot: at(60), progress: progress('9999.99') }))).toBe(
      'target_reached',
    );
    expect(amountOf(planSlice(strategy, { slot: at(60), progress: progress('9999.98') }))).toBe('0.02');
  });

  it('a receive target converts at the quote, or the window average before one', () => {
    const strategy = target({ target: { measure: 'receive', total: d('1000.000000') } });
    // 1,000 units over 24 slots at 5.00: 41.666… units, 208.33 BRL.
    expect(amountOf(planSlice(strategy, { slot: at(0), progress: progress('0') }, d('5.00')))).toBe('208.33');
    expect(amountOf(planSlice(strategy, { slot: at(0), progress: progress('0', '0', '5.00') }))).toBe(
      '208.33',
    );
    // No price seen yet: the smallest slice, resized on the quote.
    expect(amountOf(planSlice(strategy, { slot: at(0), progress: progress('0') }))).toBe('100.00');
  });

  it('opportunistic: up to upTo × the paced slice when the quote is far enough below the average seen', () => {
    const strategy = target({
      target: { opportunistic: { belowAveragePct: d('0.3'), upTo: d('2') } },
    });
    const figures = { slot: at(0), progress: progress('0', '0', '5.4000') };
    // 5.4000 × 0.997 = 5.3838: at or below it doubles the slice.
    expect(amountOf(planSlice(strategy, figures, d('5.3838')))).toBe('833.33');
    expect(amountOf(planSlice(strategy, figures, d('5.3839')))).toBe('416.66');
    // No average yet: no bargain to judge.
    expect(amountOf(planSlice(strategy, { slot: at(0), progress: progress('0') }, d('1.00')))).toBe('416.66');
  });
});

describe('resizing on the quote', () => {
  it('quotes again smaller when the quote would pass the total, larger for a bargain, else judges it as it is', () => {
    const receive = target({ target: { measure: 'receive', total: d('100.000000') } });
    const last = { slot: at(115), progress: progress('480.00', '90.000000', '5.00') };
    // Sized at the 5.00 average (50.00), but quoted at 4.00: 12.5 units would pass the 10 left.
    const cheap = { ...quoteFor('50.00', '4.00'), amount: d('50.00') };
    expect(resizeForQuote(receive, last, cheap)?.toFixed(2)).toBe('40.00');
    const spend = target({ target: { opportunistic: { belowAveragePct: d('1'), upTo: d('2') } } });
    const bargain = { ...quoteFor('416.66', '5.00'), amount: d('416.66') };
    expect(
      resizeForQuote(spend, { slot: at(0), progress: progress('0', '0', '5.40') }, bargain)?.toFixed(2),
    ).toBe('833.33');
    expect(
      resizeForQuote(spend, { slot: at(0), progress: progress('0', '0', '5.00') }, bargain),
    ).toBeUndefined();
  });
});

describe('the target rules', () => {
  it('skip a quote that would take the target past its total, and pass one that lands on it', () => {
    const strategy = { ...target(), amount: d('100.00') };
    const figures = { slot: at(60), progress: progress('9900.00') };
    const judge = (amount: string) =>
      evaluateQuote({
        strategy: { ...strategy, amount: d(amount) },
        now: at(60),
        quote: quoteFor(amount, '5.00'),
        spent: { day: d('0'), month: d('0') },
        tolerances: DEFAULT_QUOTE_TOLERANCES,
        target: figures,
      });
    expect(judge('100.00')).toMatchObject({ action: 'place' });
    const over = judge('100.05');
    expect(over).toMatchObject({ action: 'skip', reason: 'target_would_exceed' });
    expect(over.trace.find((rule) => rule.rule === 'target_total')?.detail).toEqual({
      measure: 'spend',
      total: '10000',
      done: '9900',
      order: '100.05',
      after: '10000.05',
    });
  });

  it('nothing is bought after the end, whatever the slot (a late approval, a missed slot run late)', () => {
    const late = evaluateBeforeQuote({
      strategy: target(),
      now: at(121),
      spent: { day: d('0'), month: d('0') },
      target: { slot: at(115), progress: progress('0') },
    });
    expect(late).toMatchObject({ action: 'skip', reason: 'target_outside_window' });
  });

  it('fail closed without the figures, and before the window', () => {
    const base = { strategy: target(), now: at(0), spent: { day: d('0'), month: d('0') } };
    expect(evaluateBeforeQuote(base)).toMatchObject({ action: 'skip', reason: 'target_progress_unknown' });
    expect(evaluateBeforeQuote({ ...base, target: { slot: at(-5), progress: progress('0') } })).toMatchObject(
      { action: 'skip', reason: 'target_outside_window' },
    );
  });
});

describe('where a target stands', () => {
  it('paces the line by slots: a schedule of business hours is not behind overnight', () => {
    // 264 slots, Monday 09:00 to Friday 17:00 in São Paulo, every 10 minutes from 9 to 17:59 on weekdays.
    const strategy = target({
      schedule: '*/10 9-17 * * 1-5',
      timezone: 'America/Sao_Paulo',
      target: {
        total: d('264000.00'),
        start: new Date('2031-03-03T12:00:00Z'),
        end: new Date('2031-03-07T20:00:00Z'),
      },
    });
    expect(slotsLeft(strategy, strategy.target.start)).toBe(264);
    // Friday 08:30 local, on plan: 216 slots bought (4 days of 54), 1,000.00 each.
    const friday = targetStanding(strategy, progress('216000.00'), new Date('2031-03-07T11:30:00Z'));
    expect(friday.ahead.toFixed(2)).toBe('0.00');
    expect(friday.windowLeft.toFixed(4)).toBe('0.1818');
  });

  it('extrapolates a very fine cadence past the counting bound, and sizes it as counted', () => {
    // Every second for 7 days: 604,800 slots, 3.30 a slot for 2,000,000.00, clamped to slice.min 5.00.
    const strategy = target({
      schedule: '* * * * * *',
      target: {
        total: d('2000000.00'),
        end: new Date(Date.UTC(2031, 2, 10, 12, 0, 0)),
        slice: { min: d('5.00'), max: d('1000.00') },
      },
    });
    const left = slotsLeft(strategy, at(0));
    expect(Math.abs(left - 604_800)).toBeLessThanOrEqual(1);
    expect(amountOf(planSlice(strategy, { slot: at(0), progress: progress('0') }))).toBe('5.00');
  });

  it('on the line, behind it, reached, missed', () => {
    const strategy = target();
    const active = targetStanding(strategy, progress('2500.00', '462.962962', '5.40'), at(60));
    expect(active).toMatchObject({ state: 'active' });
    expect(active.line.toFixed(2)).toBe('5000.00');
    expect(active.ahead.toFixed(2)).toBe('-2500.00');
    expect(active.ratio.toFixed(2)).toBe('0.25');
    expect(active.windowLeft.toFixed(2)).toBe('0.50');
    // A quarter of the total in the 12 slots before it: the 36 slots from it on (the next at 60 s) buy the
    // rest at that pace, the 36th at 235 s.
    expect(active.projectedFinish).toEqual(at(235));
    expect(active.averagePrice?.toFixed(4)).toBe('5.4000');
    expect(targetStanding(strategy, progress('9999.99'), at(60)).state).toBe('completed');
    const missed = targetStanding(strategy, progress('7000.00'), at(120));
    expect(missed).toMatchObject({ state: 'missed' });
    expect(missed.left.toFixed(2)).toBe('3000.00');
    expect(targetStanding(strategy, progress('0'), at(-1)).state).toBe('scheduled');
  });
});
