import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { latestSlotAtOrBefore, nextSlotAfter, slotsBetween } from '../../src/strategy/index.js';

const iso = (dates: Date[]) => dates.map((date) => date.toISOString());
const at = (text: string) => new Date(text);

describe('slots in a zone without DST', () => {
  it('weekday 10:00 in Sao Paulo is 13:00Z, Monday to Friday only', () => {
    const slots = slotsBetween(
      '0 10 * * 1-5',
      'America/Sao_Paulo',
      at('2024-06-07T00:00:00Z'),
      at('2024-06-11T00:00:00Z'),
    );
    expect(iso(slots)).toEqual(['2024-06-07T13:00:00.000Z', '2024-06-10T13:00:00.000Z']);
  });

  it('a 6-field schedule ticks on seconds', () => {
    const slots = slotsBetween(
      '*/15 * * * * *',
      'UTC',
      at('2024-01-01T00:00:00Z'),
      at('2024-01-01T00:01:00Z'),
    );
    expect(iso(slots)).toEqual([
      '2024-01-01T00:00:15.000Z',
      '2024-01-01T00:00:30.000Z',
      '2024-01-01T00:00:45.000Z',
      '2024-01-01T00:01:00.000Z',
    ]);
  });

  it('nextSlotAfter is strictly after, latestSlotAtOrBefore includes the instant itself', () => {
    const slot = at('2024-06-10T13:00:00Z');
    expect(nextSlotAfter('0 10 * * 1-5', 'America/Sao_Paulo', slot)?.toISOString()).toBe(
      '2024-06-11T13:00:00.000Z',
    );
    expect(latestSlotAtOrBefore('0 10 * * 1-5', 'America/Sao_Paulo', slot)?.toISOString()).toBe(
      slot.toISOString(),
    );
    const justBefore = new Date(slot.getTime() - 1);
    expect(latestSlotAtOrBefore('0 10 * * 1-5', 'America/Sao_Paulo', justBefore)?.toISOString()).toBe(
      '2024-06-07T13:00:00.000Z',
    );
  });

  it('month and weekday names, and Feb 29 across non-leap years', () => {
    expect(nextSlotAfter('0 12 * jan-mar mon', 'UTC', at('2024-03-31T00:00:00Z'))?.toISOString()).toBe(
      '2025-01-06T12:00:00.000Z',
    );
    expect(nextSlotAfter('0 0 29 2 *', 'UTC', at('2097-01-01T00:00:00Z'))?.toISOString()).toBe(
      '2104-02-29T00:00:00.000Z',
    );
  });

  it('a schedule that never matches has no next and no latest slot', () => {
    expect(nextSlotAfter('0 0 30 2 *', 'UTC', at('2024-01-01T00:00:00Z'))).toBeUndefined();
    expect(latestSlotAtOrBefore('0 0 31 4 *', 'UTC', at('2024-01-01T00:00:00Z'))).toBeUndefined();
  });
});

describe('slots across DST changes (America/New_York: 2024-03-10 02:00→03:00, 2024-11-03 02:00→01:00)', () => {
  const zone = 'America/New_York';

  it('spring forward: a 02:30 daily slot runs once, at 03:00 EDT (the first instant after the gap)', () => {
    const slots = slotsBetween('30 2 * * *', zone, at('2024-03-09T00:00:00Z'), at('2024-03-12T00:00:00Z'));
    expect(iso(slots)).toEqual([
      '2024-03-09T07:30:00.000Z', // 02:30 EST
      '2024-03-10T07:00:00.000Z', // 02:30 does not exist: 03:00 EDT
      '2024-03-11T06:30:00.000Z', // 02:30 EDT
    ]);
  });

  it('spring forward: readings in the gap and 03:00 itself merge into one slot, none is lost or doubled', () => {
    const slots = slotsBetween('*/15 * * * *', zone, at('2024-03-10T06:30:00Z'), at('2024-03-10T07:30:00Z'));
    expect(iso(slots)).toEqual([
      '2024-03-10T06:45:00.000Z', // 01:45 EST
      '2024-03-10T07:00:00.000Z', // 02:00..02:45 and 03:00 EDT, one slot
      '2024-03-10T07:15:00.000Z',
      '2024-03-10T07:30:00.000Z',
    ]);
  });

  it('fall back: a 01:30 daily slot runs once, at its first occurrence (EDT)', () => {
    const slots = slotsBetween('30 1 * * *', zone, at('2024-11-02T00:00:00Z'), at('2024-11-05T00:00:00Z'));
    expect(iso(slots)).toEqual([
      '2024-11-02T05:30:00.000Z',
      '2024-11-03T05:30:00.000Z',
      '2024-11-04T06:30:00.000Z',
    ]);
  });

  it('fall back: the repeated hour brings no second round', () => {
    const slots = slotsBetween('*/30 * * * *', zone, at('2024-11-03T04:00:00Z'), at('2024-11-03T08:00:00Z'));
    expect(iso(slots)).toEqual([
      '2024-11-03T04:30:00.000Z', // 00:30 EDT
      '2024-11-03T05:00:00.000Z', // 01:00 EDT
      '2024-11-03T05:30:00.000Z', // 01:30 EDT; 01:00 and 01:30 EST (06:00Z, 06:30Z) are not slots again
      '2024-11-03T07:00:00.000Z', // 02:00 EST
      '2024-11-03T07:30:00.000Z',
      '2024-11-03T08:00:00.000Z',
    ]);
  });

  it('during the repeated hour, the latest slot is the first-pass one and the next is after the hour', () => {
    const secondPass = at('2024-11-03T06:20:00Z'); // 01:20 EST
    expect(latestSlotAtOrBefore('*/15 * * * *', zone, secondPass)?.toISOString()).toBe(
      '2024-11-03T05:45:00.000Z',
    );
    expect(nextSlotAfter('*/15 * * * *', zone, secondPass)?.toISOString()).toBe('2024-11-03T07:00:00.000Z');
  });

  it('an hourly 6-field schedule skips nothing and doubles nothing over a whole DST day in Berlin', () => {
    // Europe/Berlin: 2024-10-27 03:00 CEST → 02:00 CET at 01:00Z. A day of 25 hours, 24 readings.
    const slots = slotsBetween(
      '0 0 * * * *',
      'Europe/Berlin',
      at('2024-10-26T22:00:00Z'),
      at('2024-10-27T23:00:00Z'),
    );
    expect(slots).toHaveLength(24);
    expect(new Set(iso(slots)).size).toBe(24);
    expect(iso(slots).slice(1, 4)).toEqual([
      '2024-10-27T00:00:00.000Z', // 02:00 CEST
      '2024-10-27T02:00:00.000Z', // 03:00 CET (02:00 CET is 02:00 again: not a slot)
      '2024-10-27T03:00:00.000Z',
    ]);
  });
});

describe('slots match a brute-force oracle minute by minute over DST days', () => {
  /** The rule, restated naively: walk every minute, read the wall clock with Intl, apply first-occurrence and gap rules. */
  function oracleSlots(
    matches: (hour: number, minute: number) => boolean,
    zone: string,
    from: number,
    to: number,
  ) {
    const format = new Intl.DateTimeFormat('en-CA', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
    });
    const readingAt = (ms: number) => format.format(ms).replace(',', '');
    const seen = new Map<string, number>();
    for (let ms = from - 86_400_000; ms <= to + 86_400_000; ms += 60_000) {
      const reading = readingAt(ms);
      if (!seen.has(reading)) seen.set(reading, ms);
    }
    const slots = new Set<number>();
    const days = new Set([...seen.keys()].map((reading) => reading.slice(0, 10)));
    const readings = [...seen.keys()].sort();
    for (const day of days) {
      for (let minuteOfDay = 0; minuteOfDay < 1440; minuteOfDay++) {
        const hour = Math.floor(minuteOfDay / 60);
        const minute = minuteOfDay % 60;
        if (!matches(hour, minute)) continue;
        const reading = `${day} ${String(hour).padStart(2, '0')}:${String(minute).padStart(2, '0')}`;
        const firstAfter = readings.find((candidate) => candidate >= reading);
        if (firstAfter !== undefined) slots.add(seen.get(firstAfter)!);
      }
    }
    return [...slots].filter((ms) => ms > from && ms <= to).sort((a, b) => a - b);
  }

  const cases = [
    ['*/15 * * * *', (_hour: number, minute: number) => minute % 15 === 0],
    ['30 2 * * *', (hour: number, minute: number) => hour === 2 && minute === 30],
    ['45 1 * * *', (hour: number, minute: number) => hour === 1 && minute === 45],
    ['0 * * * *', (_hour: number, minute: number) => minute === 0],
  ] as const;
  const days = [
    ['America/New_York', '2024-03-10'],
    ['America/New_York', '2024-11-03'],
    ['Europe/Berlin', '2024-03-31'],
    ['Europe/Berlin', '2024-10-27'],
    ['Australia/Lord_Howe', '2024-04-07'], // back 30 minutes at 02:00
    ['Australia/Lord_Howe', '2024-10-06'], // forward 30 minutes at 02:00
  ] as const;

  for (const [zone, day] of days) {
    it.each(cases)(`${zone} ${day}: %s`, (schedule, matches) => {
      const from = Date.parse(`${day}T00:00:00Z`) - 86_400_000;
      const to = Date.parse(`${day}T00:00:00Z`) + 2 * 86_400_000;
      const slots = slotsBetween(schedule, zone, new Date(from), new Date(to)).map((slot) => slot.getTime());
      expect(slots).toEqual(oracleSlots(matches, zone, from, to));
    });
  }
});

describe('slot functions agree with each other', () => {
  const schedules = ['*/15 * * * *', '30 2 * * *', '0 0 * * * *', '*/20 * 1-3 * * *', '0 10 * * 1-5'];
  const zones = ['America/New_York', 'Europe/Berlin', 'UTC', 'Australia/Lord_Howe'];
  // Instants around 2024's transitions, where disagreements would show.
  const instant = fc
    .integer({ min: Date.UTC(2024, 2, 9), max: Date.UTC(2024, 10, 5) })
    .map((ms) => new Date(ms));

  it('latest ≤ t < next, next(latest) is next(t), and no slot lies strictly between them', () => {
    fc.assert(
      fc.property(fc.constantFrom(...schedules), fc.constantFrom(...zones), instant, (schedule, zone, t) => {
        const latest = latestSlotAtOrBefore(schedule, zone, t)!;
        const next = nextSlotAfter(schedule, zone, t)!;
        expect(latest.getTime()).toBeLessThanOrEqual(t.getTime());
        expect(next.getTime()).toBeGreaterThan(t.getTime());
        expect(nextSlotAfter(schedule, zone, latest)?.getTime()).toBe(next.getTime());
        expect(slotsBetween(schedule, zone, latest, new Date(next.getTime() - 1))).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });
});
