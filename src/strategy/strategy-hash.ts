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
  let hash = hashes.get(strategy);
  if (hash === undefined) {
    const { source: _source, version: _version, ...configuration } = strategy;
    hash = createHash('sha256').update(canonicalJson(configuration)).digest('hex');
    hashes.set(strategy, hash);
  }
  return hash;
}

/**
 * Each strategy's hash, computed once: the worker's start asks it of the same running strategies twice (the
 * record of what was seen, the scheduler), and each hash leaves about 10 KB of garbage, 100 MB for 10,000
 * strategies. Safe because a strategy is never changed once loaded: a labelled version is a copy
 * (engine/strategy-versions.ts).
 */
const hashes = new WeakMap<Strategy, string>();

/** JSON with object keys sorted at every level and decimals as normalized decimal text. */
function canonicalJson(value: unknown): string {
  if (isDecimal(value)) return JSON.stringify(toDecimalText(value));
  // A target's window: an instant, whose object has no entries of its own.
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value)
      .filter(([, entry]) => entry !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, entry]) => `${JSON.stringify(key)}:${canonicalJson(entry)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
