import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { d, type EngineBench, startEngineBench, strategy } from './support/harness.js';

/**
 * Budgets count calendar days and months of the strategy's zone, end to end: the spend the engine reads
 * from the database must be cut at São Paulo midnight (03:00Z), not at UTC midnight. Each strategy below
 * fits one order (100.00 BRL) per period; the slot pairs straddle one midnight but not the other, so a
 * period cut in UTC would place where the zone's calendar skips, and skip where it places.
 */

const ZONE = 'America/Sao_Paulo'; // UTC-3 all year since 2019

describe(`budget periods in the strategy's zone (${ZONE})`, () => {
  let bench: EngineBench;
  beforeAll(async () => {
    bench = await startEngineBench();
  });
  afterAll(() => bench.close());

  async function outcomes(name: string, budget: { perDay?: string; perMonth?: string }, slots: string[]) {
    const capped = strategy({
      name,
      timezone: ZONE,
      budget: {
        ...(budget.perDay && { perDay: d(budget.perDay) }),
        ...(budget.perMonth && { perMonth: d(budget.perMonth) }),
      },
    });
    const results: string[] = [];
    for (const slot of slots) {
      const report = await bench.run(capped, new Date(slot));
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
});
