/**
 * JSON.parse without silent rounding. The reference carries some amounts as JSON numbers (order amount,
 * tracking amounts), and JSON.parse turns `1234567890.123456789` into the nearest double without a word.
 * Such a literal is handed on as its own text instead (`"1234567890.123456789"`), which the amount fields
 * read exactly as decimal text and every other field refuses with the field named.
 *
 * A number literal of more than MAX_DECIMAL_DIGITS digits (exponent included) is refused outright: no real
 * amount is that long, and carrying one on (an 80 KB run of zeros once cost 8 s here) only costs time.
 */
import { MAX_DECIMAL_DIGITS } from '../money.js';

export class JsonNumberTooLongError extends SyntaxError {
  override readonly name = 'JsonNumberTooLongError';
  constructor() {
    super(`number of more than ${MAX_DECIMAL_DIGITS} digits (no amount is that long)`);
  }
}

/** A JSON string literal, or a JSON number literal (strict grammar: no leading zeros, no bare dots). */
const TOKEN = /"(?:[^"\\]|\\.)*"|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/g;

/**
 * Only a number of 16 characters or more, or one with an exponent, can be rounded (or be too long); a
 * body where no member or element starts like that skips the scan (no answer of the service is a bare
 * number). A string may look like one (`":3e5"`): it is then scanned, never changed.
 */
const MAYBE_INEXACT = /[:[,]\s*-?\d(?:[\d.]{15}|[\d.]*[eE])/;

/** Up to 15 significant digits and no exponent: a double holds the value exactly enough to print it back. */
const SHORT_LITERAL_LENGTH = 16;

export function parseJsonExactly(text: string): unknown {
  return JSON.parse(quoteInexactNumbers(text));
}

/**
 * The JSON text with every number literal a double would round turned into a string literal; any other
 * text comes back unchanged. For a caller that must keep its own JSON parser (the webhook receiver keeps
 * Fastify's, with its checks against prototype poisoning).
 */
export function quoteInexactNumbers(text: string): string {
  return MAYBE_INEXACT.test(text) ? text.replace(TOKEN, quoteInexactNumber) : text;
}

function quoteInexactNumber(token: string): string {
  if (token.startsWith('"')) return token;
  if (countDigits(token) > MAX_DECIMAL_DIGITS) throw new JsonNumberTooLongError();
  if (token.length < SHORT_LITERAL_LENGTH && !/[eE]/.test(token)) return token;
  return isExactAsDouble(token) ? token : `"${token}"`;
}

function countDigits(literal: string): number {
  let digits = 0;
  for (let index = 0; index < literal.length; index++) {
    const code = literal.charCodeAt(index);
    if (code >= 48 && code <= 57) digits++;
  }
  return digits;
}

/**
 * True when the double nearest to the literal prints back as the same decimal value, which is what the
 * amount fields rely on (`decimalFromWireNumber` reads the shortest round-trip text).
 */
function isExactAsDouble(literal: string): boolean {
  const printed = String(Number(literal));
  if (!/^-?\d+(\.\d+)?(e[+-]\d+)?$/.test(printed)) return false;
  return sameDecimalValue(literal, printed);
}

/** Compares two finite decimal literals by value, exponents included, without floating point. */
function sameDecimalValue(a: string, b: string): boolean {
  const left = normalize(a);
  const right = normalize(b);
  return left.negative === right.negative && left.digits === right.digits && left.exponent === right.exponent;
}

/** `-12.340e1` → negative, digits "1234", exponent of the last digit -1; zero is digits "0", exponent 0. */
function normalize(literal: string): { negative: boolean; digits: string; exponent: number } {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(literal);
  if (match === null) throw new Error(`not a JSON number literal: ${literal}`);
  const [, sign, whole, fraction = '', exponentText = '0'] = match;
  let digits = `${whole}${fraction}`.replace(/^0+/, '');
  let exponent = Number(exponentText) - fraction.length;
  if (digits === '') return { negative: false, digits: '0', exponent: 0 };
  const trailingZeros = /0*$/.exec(digits)![0].length;
  digits = digits.slice(0, digits.length - trailingZeros);
  exponent += trailingZeros;
  return { negative: sign === '-', digits, exponent };
}
