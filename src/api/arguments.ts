/**
 * Argument checks run before any request leaves: a bad argument is our bug or the operator's typo, and
 * sending it would cost a round trip (or, for an order, a quote) to learn the same thing.
 */
import { type Decimal, formatMoney, isDecimal } from '../money.js';
import { FX_RATE_LENGTH, FX_RATE_SCALE } from './assumptions.js';
import { ApiInvalidArgumentError } from './errors.js';
import { QUOTE_ID_PATTERN } from './wire-fields.js';

const FX_RATE_TEXT = /^\d+\.\d+$/;

function invalid(operation: string, field: string, reason: string): never {
  throw new ApiInvalidArgumentError(`${operation}: ${field} ${reason}`, { operation, field });
}

function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  return typeof value === 'number' || typeof value === 'boolean' ? String(value) : typeof value;
}

export function checkQuoteId(operation: string, quoteId: unknown): string {
  if (typeof quoteId !== 'string' || !QUOTE_ID_PATTERN.test(quoteId)) {
    invalid(operation, 'quoteId', `must be 8 to 9 letters or digits (got ${show(quoteId)})`);
  }
  return quoteId;
}

export function checkFxRate(operation: string, fxRate: unknown): string {
  const ok =
    typeof fxRate === 'string' &&
    FX_RATE_TEXT.test(fxRate) &&
    fxRate.length >= FX_RATE_LENGTH.min &&
    fxRate.length <= FX_RATE_LENGTH.max &&
    /[1-9]/.test(fxRate);
  if (!ok) {
    invalid(
      operation,
      'fxRate',
      `must be positive decimal text of ${FX_RATE_LENGTH.min} to ${FX_RATE_LENGTH.max} characters like "5.4321" (got ${show(fxRate)})`,
    );
  }
  return fxRate;
}

/**
 * The fxRate to send for an accepted quote price: four decimals, banker's rounding. Throws
 * API_INVALID_ARGUMENT when the result does not fit the 6-7 character format (prices that round to 100 or
 * more) or rounds to zero.
 */
export function formatFxRate(price: Decimal): string {
  if (!isDecimal(price) || !price.isFinite() || price.lte(0)) {
    invalid('formatFxRate', 'price', 'must be a positive finite Decimal');
  }
  return checkFxRate('formatFxRate', formatMoney(price, FX_RATE_SCALE, 'halfEven'));
}

export function checkPositiveAmount(operation: string, field: string, amount: unknown): Decimal {
  if (!isDecimal(amount) || !amount.isFinite() || amount.lte(0)) {
    invalid(operation, field, `must be a positive finite Decimal (got ${show(String(amount))})`);
  }
  return amount;
}

export function checkText(operation: string, field: string, value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '' || value.length > 200) {
    invalid(operation, field, `must be non-empty text (got ${show(value)})`);
  }
  return value;
}

export function checkOneOf<T extends string>(
  operation: string,
  field: string,
  value: unknown,
  allowed: readonly T[],
): T {
  if (!allowed.includes(value as T))
    invalid(operation, field, `must be one of ${allowed.join(', ')} (got ${show(value)})`);
  return value as T;
}

export function checkBoolean(operation: string, field: string, value: unknown): boolean {
  if (typeof value !== 'boolean') invalid(operation, field, `must be true or false (got ${show(value)})`);
  return value;
}

export function checkIntegerInRange(
  operation: string,
  field: string,
  value: number | undefined,
  range: { min: number; max?: number },
): number | undefined {
  if (value === undefined) return undefined;
  const ok = Number.isInteger(value) && value >= range.min && (range.max === undefined || value <= range.max);
  if (!ok) {
    const bound =
      range.max === undefined ? `an integer >= ${range.min}` : `an integer from ${range.min} to ${range.max}`;
    invalid(operation, field, `must be ${bound} (got ${show(value)})`);
  }
  return value;
}

export function checkDate(operation: string, field: string, value: Date | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!(value instanceof Date) || Number.isNaN(value.getTime()))
    invalid(operation, field, 'must be a valid Date');
  return value.toISOString();
}

export function checkUrl(operation: string, field: string, value: unknown): string {
  let parsed: URL | undefined;
  try {
    parsed = typeof value === 'string' ? new URL(value) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
    // The value is not echoed: a webhook URL carries the receiver's secret in its path.
    invalid(operation, field, 'must be an absolute http(s) URL');
  }
  return value as string;
}
