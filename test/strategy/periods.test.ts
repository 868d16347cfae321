import { describe, expect, it } from 'vitest';
import { budgetPeriods, slotToCatchUp } from '../../src/strategy/index.js';
import { dca } from './strategy-builders.js';

function periodsAsText(zone: string, instant: string) {
  const { day, month } = budgetPeriods(zone, new Date(instant));
  return {
    day: [day.start.toISOString(), day.end.toISOString()],
    month: [month.start.toISOString(), month.end.toISOString()],
  };
}

describe('budgetPeriods', () => {
  it.each([
    [
      'America/Sao_Paulo',
      '2024-06-10T02:59:59.999Z', // still 9 June 23:59 in Sao Paulo
      ['2024-06-09T03:00:00.000Z', '2024-06-10T03:00:00.000Z'],
      ['2024-06-01T03:00:00.000Z', '2024-07-01T03:00:00.000Z'],
    ],
    [
      'America/Sao_Paulo',
      '2024-06-10T03:00:00.000Z', // the start of 10 June belongs to 10 June (half-open)
      ['2024-06-10T03:00:00.000Z', '2024-06-11T03:00:00.000Z'],
      ['2024-06-01T03:00:00.000Z', '2024-07-01T03:00:00.000Z'],
    ],
    [
      'UTC',
      '2024-12-31T23:59:59.000Z',
      ['2024-12-31T00:00:00.000Z', '2025-01-01T00:00:00.000Z'],
      ['2024-12-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z'],
    ],
    [
      'America/New_York',
      '2024-03-10T12:00:00.000Z', // spring-forward day: 23 hours
      ['2024-03-10T05:00:00.000Z', '2024-03-11T04:00:00.000Z'],
      ['2024-03-01T05:00:00.000Z', '2024-04-01T04:00:00.000Z'],
    ],
    [
      'America/New_York',
      '2024-11-03T12:00:00.000Z', // fall-back day: 25 hours
      ['2024-11-03T04:00:00.000Z', '2024-11-04T05:00:00.000Z'],
      ['2024-11-01T04:00:00.000Z', '2024-12-01T05:00:00.000Z'],
    ],
    [
      'America/Havana', // clocks jump from 00:00 to 01:00: the day starts at 01:00 CDT
      '2024-03-10T12:00:00.000Z',
      ['2024-03-10T05:00:00.000Z', '2024-03-11T04:00:00.000Z'],
      ['2024-03-01T05:00:00.000Z', '2024-04-01T04:00:00.000Z'],
    ],
  ])('%s at %s', (zone, instant, day, month) => {
    expect(periodsAsText(zone, instant)).toEqual({ day, month });
  });
});

describe('slotToCatchUp (weekday 10:00 Sao Paulo = 13:00Z, grace 30m)', () => {
  const slot = '2024-06-10T13:00:00.000Z';
  const once = dca({ missed: 'once', missedGraceMs: 30 * 60_000 });
  it.each([
    ['once, within grace', once, '2024-06-10T13:29:59.000Z', undefined, slot],
    ['once, exactly at the grace', once, '2024-06-10T13:30:00.000Z', undefined, slot],
    ['once, past the grace', once, '2024-06-10T13:30:00.001Z', undefined, undefined],
    ['once, slot already handled', once, '2024-06-10T13:10:00.000Z', slot, undefined],
    ['once, an earlier slot handled', once, '2024-06-10T13:10:00.000Z', '2024-06-07T13:00:00.000Z', slot],
    ['skip', dca({ missed: 'skip' }), '2024-06-10T13:01:00.000Z', undefined, undefined],
  ])('%s', (_title, strategy, now, lastHandledSlot, expected) => {
    const result = slotToCatchUp({
      strategy,
      now: new Date(now),
      ...(lastHandledSlot && { lastHandledSlot: new Date(lastHandledSlot) }),
    });
    expect(result?.toISOString()).toBe(expected);
  });
});
