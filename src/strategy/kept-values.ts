/**
 * Values a worker keeps for its whole life (the loaded strategies, caches keyed by them), copied into a form
 * that costs no more memory than it must; with 10,000 strategies each byte counts ten thousand times.
 */
import { Decimal } from '../money.js';

/**
 * A copy of the text that does not point into the string it was taken from. V8 keeps a value of 13 or more
 * characters cut out of a larger string as a slice of it, so one strategy value kept for the worker's life
 * (in a strategy record, or as a cache key) would keep its whole file's text alive: 2.4 MB for a file of
 * 10,000 strategies.
 */
export function detached(text: string): string {
  return Buffer.from(text, 'utf8').toString('utf8');
}

/**
 * The same value in a right-sized copy. decimal.js grows a parsed number's digit array as V8 grows any
 * array that is pushed to (room for 17 entries, 152 bytes, for a one-word number); copying a Decimal
 * slices that array to its length. Worth it only for values kept for the worker's life.
 */
export function compact(value: Decimal): Decimal {
  return new Decimal(value);
}
