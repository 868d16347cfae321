import { isDecimal, toDecimalText } from '../money.js';
import type { JsonValue } from './types.js';

/**
 * Turns a value from the wire or the domain into what jsonb can hold without losing meaning: Decimals
 * become exact decimal text (never a float), Dates ISO 8601 text, bigints decimal text and binary data
 * base64 (msgpack bodies may carry both). `undefined` members are dropped, as JSON.stringify would.
 */
export function toJson(value: unknown): JsonValue {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value);
  if (typeof value === 'bigint') return value.toString();
  if (isDecimal(value)) return toDecimalText(value);
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  if (Array.isArray(value)) return value.map(toJson);
  if (value instanceof Map) return toJson(Object.fromEntries(value));
  if (typeof value === 'object') {
    const out: { [key: string]: JsonValue } = {};
    for (const [key, member] of Object.entries(value)) {
      if (member !== undefined) out[key] = toJson(member);
    }
    return out;
  }
  return String(value);
}
