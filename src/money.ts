import { Decimal as DecimalBase } from 'decimal.js';

/**
 * The one Decimal configuration of the project. 40 significant digits hold any amount the service can
 * quote (18 fractional digits for crypto quantities plus a wide integer part) without silent rounding;
 * the default rounding is banker's rounding so that accumulated sums do not drift in one direction.
 * Anything that leaves the process is formatted with an explicit scale and rounding (`formatMoney`).
 */
export const Decimal = DecimalBase.clone({
  precision: 40,
  rounding: DecimalBase.ROUND_HALF_EVEN,
  toExpNeg: -40,
  toExpPos: 40,
  minE: -9e15,
  maxE: 9e15,
});
export type Decimal = InstanceType<typeof Decimal>;

/** Plain decimal text: optional minus, digits, optional fraction. No spaces, commas, signs or exponents. */
const DECIMAL_TEXT = /^-?\d+(\.\d+)?$/;

/**
 * No real amount is written with more digits than the precision above holds (18 fractional digits of a
 * crypto quantity and a wide integer part fit well inside): longer text is refused rather than carried,
 * so that a hostile service or file cannot make every later step work on a number of a million digits.
 */
export const MAX_DECIMAL_DIGITS = 40;

export class MoneyFormatError extends Error {
  override readonly name = 'MoneyFormatError';
  readonly code = 'MONEY_FORMAT';
  constructor(
    readonly field: string,
    readonly value: unknown,
    reason: string,
  ) {
    super(`${field}: ${reason} (got ${describeValue(value)})`);
  }
}

function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (value === null) return 'null';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return typeof value;
}

/**
 * Parses decimal text such as `"5.4321"` or `"-0.5"`. Rejects anything a human might mistype or a
 * service might emit by accident (`""`, `"1,5"`, `" 5"`, `"NaN"`, `"Infinity"`, `"1e3"`), naming the
 * field so the error can be traced to the input that carried it.
 */
export function parseDecimal(value: unknown, field: string): Decimal {
  if (typeof value !== 'string') throw new MoneyFormatError(field, value, 'expected decimal text');
  if (!DECIMAL_TEXT.test(value)) {
    throw new MoneyFormatError(field, value, 'expected decimal text like "1234.56"');
  }
  if (value.length - (value.startsWith('-') ? 1 : 0) - (value.includes('.') ? 1 : 0) > MAX_DECIMAL_DIGITS) {
    throw new MoneyFormatError(field, value, `more than ${MAX_DECIMAL_DIGITS} digits`);
  }
  return new Decimal(value);
}

/**
 * The reference carries some amounts as JSON numbers (order `amount`, tracking amounts). A finite number is
 * converted through its shortest round-trip text, which reproduces what the sender wrote for any value of
 * up to 15 significant digits; non-finite values are refused.
 */
export function decimalFromWireNumber(value: unknown, field: string): Decimal {
  if (typeof value === 'string') return parseDecimal(value, field);
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new MoneyFormatError(field, value, 'expected a finite number');
  }
  return new Decimal(value.toString());
}

/** Rounding modes by name, so that every call site says which one it means. */
export const Rounding = {
  down: DecimalBase.ROUND_DOWN,
  up: DecimalBase.ROUND_UP,
  halfUp: DecimalBase.ROUND_HALF_UP,
  halfEven: DecimalBase.ROUND_HALF_EVEN,
} as const;
export type RoundingName = keyof typeof Rounding;

/** Fixed-scale text for display and for the wire where a scale is part of the contract. */
export function formatMoney(value: Decimal, scale: number, rounding: RoundingName): string {
  if (!Number.isInteger(scale) || scale < 0) throw new RangeError(`scale must be a non-negative integer`);
  return value.toFixed(scale, Rounding[rounding]);
}

/** Exact decimal text, never in exponent form: what goes to the database and into JSON output. */
export function toDecimalText(value: Decimal): string {
  if (!value.isFinite()) throw new RangeError('refusing to serialize a non-finite decimal');
  return value.toFixed();
}

export function isDecimal(value: unknown): value is Decimal {
  return value instanceof Decimal;
}

export const ZERO = new Decimal(0);
