import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CycleTrigger } from '../../src/db/index.js';
import { d, type EngineBench, startEngineBench, strategy } from './support/harness.js';

/**
 * Budgets count calendar days and months of the strategy's zone, end to end: the spend the engine reads
 * from the database must be cut at São Paulo midnight (03:00Z), not at UTC midnight. Each strategy below
 * fits one order (100.00 BRL) per period; the instants straddle one midnight but not the other, so a
 * period cut in UTC would place where the zone's calendar skips, and skip where it places.
 *
 * A cycle is charged to the period in which its intent is committed, not to its slot's: spend limits cap
 * what leaves the account per calendar period, so a past `--slot`, a late missed slot and an order sent
 * after midnight for a slot before it all count where the money went.
 */

const ZONE = 'America/Sao_Paulo'; // UTC-3 all year since 2019

describe(`budget periods in the strategy's zone (${ZONE})`, () => {
  let bench: EngineBench;
  let now = new Date();
  beforeAll(async () => {
    bench = await startEngineBench({ clock: () => now });
  });
  afterAll(() => bench.close());

  /** Runs each slot at its own instant (the cycle's clock is the slot's time plus one second). */
  async function outcomes(
    name: string,
    budget: { perDay?: string; perMonth?: string },
    slots: (string | { slot: string; at: string; trigger?: CycleTrigger })[],
  ) {
    const capped = strategy({
      name,
      timezone: ZONE,
      budget: {
        ...(budget.perDay && { perDay: d(budget.perDay) }),
        ...(budget.perMonth && { perMonth: d(budget.perMonth) }),
      },
    });
    const results: string[] = [];
    for (const entry of slots) {
      const { slot, at, trigger } =
        typeof entry === 'string' ? { slot: entry, at: undefined, trigger: undefined } : entry;
      now = at === undefined ? new Date(new Date(slot).getTime() + 1_000) : new Date(at);
      const report = await bench.run(capped, new Date(slot), trigger);
      results.push(`${report.outcome}:${report.reason}`);
    }
    return results;
  }

  it('per day: a new day starts at local midnight, and the local day runs past UTC midnight', async () => {
    const results = await outcomes('zone-day', { perDay: '150.00' }, [
      '2031-01-01T02:30:00Z', // 31 Dec 23:30 local
      '2031-01-01T03:30:00Z', // 1 Jan 00:30 local: a new local day, the same UTC day
      '2031-01-02T02:00:00Z', // 1 Jan 23:00 local: the same local day, a new UTC day
    ]);
    expect(results).toEqual(['placed:ok', 'placed:ok', 'skipped:budget_day_exceeded']);
  });

  it('per month: a new month starts at local midnight of the 1st', async () => {
    const results = await outcomes('zone-month', { perMonth: '150.00' }, [
      '2031-02-01T02:30:00Z', // 31 Jan 23:30 local
      '2031-02-01T03:30:00Z', // 1 Feb 00:30 local: a new local month, the same UTC month
      '2031-03-01T02:00:00Z', // 28 Feb 23:00 local: the same local month, a new UTC month
    ]);
    expect(results).toEqual(['placed:ok', 'placed:ok', 'skipped:budget_month_exceeded']);
  });

  // On the first release each of these spent today's money against the slot's old period.
  it('a past `--slot` run today counts against today', async () => {
    const results = await outcomes('charged-today-once', { perDay: '150.00' }, [
      '2031-05-10T15:00:00Z', // 10 May 12:00 local: placed, the day's room is used
      { slot: '2031-05-01T15:00:00Z', at: '2031-05-10T15:05:00Z', trigger: 'once' }, // 1 May's slot, run on 10 May
    ]);
    expect(results).toEqual(['placed:ok', 'skipped:budget_day_exceeded']);
  });

  it('a missed slot run late counts against the day it runs, and its own day keeps its room', async () => {
    const results = await outcomes('charged-today-missed', { perDay: '150.00' }, [
      { slot: '2031-05-11T14:00:00Z', at: '2031-05-12T13:00:00Z', trigger: 'missed' }, // 11 May's slot, run on 12 May
      '2031-05-12T14:00:00Z', // 12 May's own slot: the day's room is gone
      '2031-05-13T14:00:00Z', // 13 May: a new day
    ]);
    expect(results).toEqual(['placed:ok', 'skipped:budget_day_exceeded', 'placed:ok']);
  });

  it('a slot just before local midnight whose order is sent after midnight counts against the new day', async () => {
    const results = await outcomes('charged-after-midnight', { perDay: '150.00' }, [
      '2031-05-20T15:00:00Z', // 20 May 12:00 local: placed
      { slot: '2031-05-21T02:59:59Z', at: '2031-05-21T03:00:01Z' }, // 20 May 23:59:59 slot, sent 21 May 00:00:01
      '2031-05-21T15:00:00Z', // 21 May 12:00 local: that order took the day's room
    ]);
    expect(results).toEqual(['placed:ok', 'placed:ok', 'skipped:budget_day_exceeded']);
  });
});
