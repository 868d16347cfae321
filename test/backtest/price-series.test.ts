import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BacktestInputError, parsePriceCsv, readPriceFile } from '../../src/backtest/index.js';
import { DEMO_TOKEN, startSandbox } from '../../src/sandbox/index.js';

const parse = (text: string, maxGapMs = 3_600_000) => parsePriceCsv(text, 'prices.csv', { maxGapMs });
const failure = (text: string, maxGapMs?: number) => {
  try {
    parse(text, maxGapMs);
  } catch (error) {
    expect(error).toBeInstanceOf(BacktestInputError);
    return (error as Error).message;
  }
  throw new Error('parsed');
};

describe('price series', () => {
  it('reads ISO 8601 with a zone and epoch seconds, any column order, extra columns ignored', () => {
    const series = parse(
      'volume,price,timestamp\n7,5.4000,2026-03-02T10:00:00Z\n8,5.41,1772445660\n9,"5.42",2026-03-02T07:02:00-03:00\n',
    );
    expect([...series.times]).toEqual([
      Date.parse('2026-03-02T10:00:00Z'),
      Date.parse('2026-03-02T10:01:00Z'),
      Date.parse('2026-03-02T10:02:00Z'),
    ]);
    expect(series.prices).toEqual(['5.4000', '5.41', '5.42']);
  });

  it('quotes the last price at or before an instant, nothing before the first row', () => {
    const series = parse('timestamp,price\n2026-03-02T10:00:00Z,5.40\n2026-03-02T10:05:00Z,5.50\n');
    expect(series.priceAt(Date.parse('2026-03-02T09:59:59Z'))).toBeUndefined();
    expect(series.priceAt(Date.parse('2026-03-02T10:00:00Z'))?.toFixed()).toBe('5.4');
    expect(series.priceAt(Date.parse('2026-03-02T10:04:59.999Z'))?.toFixed()).toBe('5.4');
    expect(series.priceAt(Date.parse('2026-03-02T10:05:00Z'))?.toFixed()).toBe('5.5');
    expect(series.priceAt(Date.parse('2027-01-01T00:00:00Z'))?.toFixed()).toBe('5.5');
  });

  it('keeps prices exact: decimal text, never a binary number', () => {
    const series = parse('timestamp,price\n2026-03-02T10:00:00Z,5.123456789012345678901\n');
    expect(series.priceAt(series.first)?.toFixed()).toBe('5.123456789012345678901');
  });

  it('names the line and value of every kind of bad row', () => {
    expect(failure('time,value\n2026-03-02T10:00:00Z,5.4\n')).toBe(
      'prices.csv line 1: the header must name the columns timestamp and price; `timestamp` and `price` missing (got "time,value")',
    );
    expect(failure('timestamp,close\n2026-03-02T10:00:00Z,5.4\n')).toMatch(
      /^prices.csv line 1: .*`price` missing/,
    );
    expect(failure('timestamp,price\n2026-03-02T10:00:00Z,5.4\n2026-03-02T10:01:00Z,5,4\n')).toBe(
      'prices.csv line 3: expected 2 columns, got 3',
    );
    expect(failure('timestamp,price\n2026-03-02T10:00:00Z,5.4\n2026-03-02T10:01:00Z,abc\n')).toBe(
      'prices.csv line 3: price "abc" is not a positive decimal like 5.4321',
    );
    expect(failure('timestamp,price\n2026-03-02T10:00:00Z,1e3\n')).toBe(
      'prices.csv line 2: price "1e3" is not a positive decimal like 5.4321',
    );
    expect(failure('timestamp,price\n2026-03-02T10:00:00Z,0.0000\n')).toMatch(/line 2: price "0.0000"/);
    expect(failure('timestamp,price\n2026-03-02T10:00:00Z,-5.4\n')).toMatch(/line 2: price "-5.4"/);
    expect(failure('timestamp,price\n2026-03-02 10:00:00,5.4\n')).toBe(
      'prices.csv line 2: timestamp "2026-03-02 10:00:00" is neither ISO 8601 with a zone (2026-01-05T10:00:00Z) nor epoch seconds',
    );
    expect(failure('timestamp,price\n2026-03-02T10:00:00,5.4\n')).toMatch(
      /line 2: timestamp "2026-03-02T10:00:00"/,
    );
    expect(failure('timestamp,price\n2026-03-02T10:00:00Z\n')).toBe(
      'prices.csv line 2: expected 2 columns, got 1',
    );
    expect(failure('timestamp,price\n')).toBe('prices.csv: no price rows after the header');
  });

  it('refuses rows out of order or repeated, naming the line', () => {
    const text =
      'timestamp,price\n2026-03-02T10:00:00Z,5.4\n2026-03-02T10:02:00Z,5.4\n2026-03-02T10:01:00Z,5.4\n';
    expect(failure(text)).toBe(
      "prices.csv line 4: timestamp 2026-03-02T10:01:00Z is not after the previous row's 2026-03-02T10:02:00.000Z; rows must be in increasing time order",
    );
    expect(failure('timestamp,price\n2026-03-02T10:00:00Z,5.4\n2026-03-02T10:00:00Z,5.5\n')).toMatch(
      /^prices.csv line 3: .* not after/,
    );
  });

  it('refuses a gap longer than allowed', () => {
    const text =
      'timestamp,price\n2026-03-02T10:00:00Z,5.4\n2026-03-02T11:00:00Z,5.4\n2026-03-02T12:30:00Z,5.4\n';
    expect(() => parse(text, 90 * 60_000)).not.toThrow();
    expect(failure(text, 3_600_000)).toBe(
      'prices.csv line 4: 1h30m without a price since 2026-03-02T11:00:00.000Z, longer than the allowed gap of 1h (--max-gap)',
    );
  });

  it('names a file that is missing', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'tb-series-'));
    try {
      await expect(readPriceFile(join(folder, 'nope.csv'), { maxGapMs: 1 })).rejects.toThrow(
        `${join(folder, 'nope.csv')}: cannot read the price file (no such file)`,
      );
      await expect(readPriceFile(folder, { maxGapMs: 1 })).rejects.toThrow(/is a folder/);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });
});

describe('sandbox replaying a series', () => {
  it('quotes the price of the series at its clock, N times faster, at the service scale', async () => {
    const series = parse(
      'timestamp,price\n2026-03-02T10:00:00Z,5.40004\n2026-03-02T10:01:00Z,5.4100\n2026-03-02T10:02:00Z,5.4200\n',
    );
    let now = 1_000_000;
    const sandbox = await startSandbox({ now: () => now, replay: { series, speed: 60 } });
    const price = async () => {
      const response = await fetch(`${sandbox.url}/client/quote?symbols=USDTBRL&amount=100`, {
        headers: { authorization: `Bearer ${DEMO_TOKEN}` },
      });
      return ((await response.json()) as { price: string }).price;
    };
    try {
      expect(await price()).toBe('5.4000');
      now += 999; // 59.94 s of series time
      expect(await price()).toBe('5.4000');
      now += 1; // one series minute
      expect(await price()).toBe('5.4100');
      now += 60_000; // past the end: the last price holds
      expect(await price()).toBe('5.4200');
    } finally {
      await sandbox.close();
    }
  });
});
