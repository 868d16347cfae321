import { createHash } from 'node:crypto';
import { isDecimal, toDecimalText } from '../money.js';
import type { Strategy } from './types.js';

/**
 * A stable fingerprint of a strategy's validated configuration: what tells one strategy version from
 * another, and the scheduler a changed strategy from an unchanged one. Where the strategy was written
 * (`source`) and its version number are left out, and so is how it was written: `"2500.00"` and `"2500"`,
 * or `60m` and `1h`, hash the same, because they configure the same behaviour.
 */
export function strategyHash(strategy: Strategy): string {
  const { source: _source, version: _version, ...configuration } = strategy;
  return createHash('sha256').update(canonicalJson(configuration)).digest('hex');
}

/** JSON with object keys sorted at every level and decimals as normalized decimal text. */
function canonicalJson(value: unknown): string {
  if (isDecimal(value)) return JSON.stringify(toDecimalText(value));
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value)
      .filter(([, entry]) => entry !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, entry]) => `${JSON.stringify(key)}:${canonicalJson(entry)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
