import { createHash } from 'node:crypto';

/**
 * The identity of a webhook event: sha256 over its kind and its data in a canonical form (keys sorted,
 * binary as base64, dates as ISO text). The same event redelivered, in JSON or in msgpack, gets the same
 * key; the key is what the database's unique index dedupes on, and what the backfill matches log entries by.
 */
export function webhookDedupeKey(kind: string, data: unknown): string {
  return createHash('sha256')
    .update(kind)
    .update('\n')
    .update(JSON.stringify(canonical(data)))
    .digest('hex');
}

function canonical(value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value.toISOString();
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  if (typeof value === 'bigint') return value.toString();
  if (Array.isArray(value)) return value.map(canonical);
  if (value instanceof Map) return canonical(Object.fromEntries(value));
  if (typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const member = (value as Record<string, unknown>)[key];
      if (member !== undefined) out[key] = canonical(member);
    }
    return out;
  }
  return value;
}
