import { readFile } from 'node:fs/promises';
import { Decimal } from '../money.js';
// Not the strategy index, which loads zod and yaml: the command line reads DEFAULT_MAX_GAP_MS for its help.
import { formatDuration } from '../strategy/duration.js';
import { BacktestInputError } from './input-error.js';

/**
 * A price history read from CSV: a header naming `timestamp` and `price` (other columns are ignored), then
 * one row per price, timestamps strictly increasing. A timestamp is ISO 8601 with a zone (`Z` or `+hh:mm`;
 * a reading without one would mean a different instant on every machine) or whole epoch seconds. Prices stay
 * decimal text until quoted, so a year of minute rows costs a string each, not a Decimal each.
 */

export interface SeriesOptions {
  /** Longest allowed distance between two consecutive rows. */
  maxGapMs: number;
}

export const DEFAULT_MAX_GAP_MS = 3_600_000;

const PRICE_TEXT = /^\d+(\.\d+)?$/;
const NON_ZERO = /[1-9]/;
const EPOCH_SECONDS = /^\d{1,12}$/;
const ISO_WITH_ZONE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i;

export class PriceSeries {
  constructor(
    /** Where the series came from, for messages. */
    readonly file: string,
    /** Instants in ms, strictly increasing. */
    readonly times: Float64Array,
    /** Decimal text of each row's price, positive. */
    readonly prices: readonly string[],
  ) {}

  get length(): number {
    return this.times.length;
  }

  get first(): number {
    return this.times[0]!;
  }

  get last(): number {
    return this.times[this.times.length - 1]!;
  }

  /** Index of the last row at or before the instant, or -1 before the first row. */
  indexAt(instant: number): number {
    const { times } = this;
    let low = 0;
    let high = times.length - 1;
    if (high < 0 || instant < times[0]!) return -1;
    while (low < high) {
      const middle = (low + high + 1) >>> 1;
      if (times[middle]! <= instant) low = middle;
      else high = middle - 1;
    }
    return low;
  }

  /**
   * indexAt for an instant at or after the row `hint` (not after the instant): callers that walk forward in
   * time find the next row in a step or two rather than a search of the whole series.
   */
  indexFrom(hint: number, instant: number): number {
    const { times } = this;
    let index = hint;
    for (let steps = 0; steps < 8; steps++) {
      if (index + 1 >= times.length || times[index + 1]! > instant) return index;
      index++;
    }
    return this.indexAt(instant);
  }

  /** The last price at or before the instant; undefined before the first row. */
  priceAt(instant: number): Decimal | undefined {
    const index = this.indexAt(instant);
    return index < 0 ? undefined : new Decimal(this.prices[index]!);
  }
}

export async function readPriceFile(file: string, options: SeriesOptions): Promise<PriceSeries> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a folder' : String(code);
    throw new BacktestInputError(`${file}: cannot read the price file (${why})`);
  }
  return parsePriceCsv(text, file, options);
}

export function parsePriceCsv(text: string, file: string, options: SeriesOptions): PriceSeries {
  const headerEnd = lineEnd(text, 0);
  const headerLine = text.slice(0, headerEnd);
  const header = splitRow(headerLine).map((cell) => cell.toLowerCase());
  const timeColumn = header.indexOf('timestamp');
  const priceColumn = header.indexOf('price');
  if (timeColumn < 0 || priceColumn < 0) {
    const missing = [timeColumn < 0 ? '`timestamp`' : '', priceColumn < 0 ? '`price`' : '']
      .filter(Boolean)
      .join(' and ');
    throw new BacktestInputError(
      `${file} line 1: the header must name the columns timestamp and price; ${missing} missing (got ${JSON.stringify(headerLine.trim().slice(0, 80))})`,
    );
  }
  // Rows are scanned in place rather than split into an array of lines: a year of minutes is 525,600 of them.
  let times = new Float64Array(Math.max(Math.ceil(text.length / 24), 16));
  const prices: string[] = [];
  // A year of minutes holds a few thousand distinct prices: rows share one string per price.
  const distinctPrices = new Map<string, string>();
  let lineNumber = 1;
  // For messages; made once, not per row.
  const at = () => `${file} line ${lineNumber}`;
  for (let start = headerEnd + 1; start < text.length; start = lineEnd(text, start) + 1) {
    lineNumber++;
    const line = text.slice(start, lineEnd(text, start));
    if (line.trim() === '') continue;
    const cells = splitRow(line);
    // A decimal comma (5,4) shows up here as one column too many.
    if (cells.length !== header.length) {
      throw new BacktestInputError(`${at()}: expected ${header.length} columns, got ${cells.length}`);
    }
    const stamp = cells[timeColumn]!;
    const price = cells[priceColumn]!;
    const instant = parseTimestamp(stamp);
    if (instant === undefined) {
      throw new BacktestInputError(
        `${at()}: timestamp ${JSON.stringify(stamp)} is neither ISO 8601 with a zone (2026-01-05T10:00:00Z) nor epoch seconds`,
      );
    }
    if (!PRICE_TEXT.test(price) || !NON_ZERO.test(price)) {
      throw new BacktestInputError(
        `${at()}: price ${JSON.stringify(price)} is not a positive decimal like 5.4321`,
      );
    }
    const count = prices.length;
    if (count > 0) {
      const previous = times[count - 1]!;
      if (instant <= previous) {
        throw new BacktestInputError(
          `${at()}: timestamp ${stamp} is not after the previous row's ${new Date(previous).toISOString()}; rows must be in increasing time order`,
        );
      }
      if (instant - previous > options.maxGapMs) {
        throw new BacktestInputError(
          `${at()}: ${formatDuration(instant - previous)} without a price since ${new Date(previous).toISOString()}, longer than the allowed gap of ${formatDuration(options.maxGapMs)} (--max-gap)`,
        );
      }
    }
    if (count === times.length) {
      const grown = new Float64Array(count * 2);
      grown.set(times);
      times = grown;
    }
    times[count] = instant;
    let shared = distinctPrices.get(price);
    if (shared === undefined) {
      shared = price;
      distinctPrices.set(price, price);
    }
    prices.push(shared);
  }
  if (prices.length === 0) throw new BacktestInputError(`${file}: no price rows after the header`);
  return new PriceSeries(file, times.slice(0, prices.length), prices);
}

function lineEnd(text: string, from: number): number {
  const end = text.indexOf('\n', from);
  return end < 0 ? text.length : end;
}

function splitRow(line: string): string[] {
  const cells = line.split(',');
  for (let index = 0; index < cells.length; index++) {
    const cell = cells[index]!.trim();
    const quoted = cell.length >= 2 && cell.startsWith('"') && cell.endsWith('"');
    cells[index] = quoted ? cell.slice(1, -1) : cell;
  }
  return cells;
}

function parseTimestamp(text: string): number | undefined {
  if (EPOCH_SECONDS.test(text)) return Number(text) * 1000;
  if (!ISO_WITH_ZONE.test(text)) return undefined;
  const instant = Date.parse(text);
  return Number.isNaN(instant) ? undefined : instant;
}
