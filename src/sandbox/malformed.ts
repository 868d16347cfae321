import { encodeBody, type WireFormat } from './protocol.js';
import type { MalformedKind } from './types.js';

/** A byte msgpack never uses, so a body starting with it cannot be decoded. */
const MSGPACK_NEVER_USED = 0xc1;

/**
 * Corrupts a response the way a faulty service or proxy might: broken syntax, a cut-off body, fields of
 * the wrong type, or a price that parses but cannot be trusted. Price corruption reaches list items too.
 */
export function malformBody(kind: MalformedKind, format: WireFormat, body: unknown): string | Buffer {
  switch (kind) {
    case 'syntax':
      return format === 'json'
        ? `{${JSON.stringify(body)}`
        : Buffer.concat([Buffer.from([MSGPACK_NEVER_USED]), encodeBody(format, body).payload as Buffer]);
    case 'truncate': {
      const payload = encodeBody(format, body).payload;
      return payload.slice(0, Math.max(1, Math.floor(payload.length / 2)));
    }
    case 'types':
      return encodeBody(format, swapTypes(body)).payload;
    case 'nan-price':
      return encodeBody(
        format,
        mapPrices(body, () => 'NaN'),
      ).payload;
    case 'negative-price':
      return encodeBody(
        format,
        mapPrices(body, (price) => `-${String(price).replace(/^-/, '')}`),
      ).payload;
    case 'other-symbol':
      return encodeBody(format, isRecord(body) ? { ...body, symbol: 'BTCBRL' } : body).payload;
    case 'short-quote-id':
      return encodeBody(format, isRecord(body) ? { ...body, quoteId: 'Q1' } : body).payload;
    case 'negative-expires':
      return encodeBody(format, isRecord(body) ? { ...body, expiresIn: -5 } : body).payload;
    case 'huge-expires':
      return encodeBody(format, isRecord(body) ? { ...body, expiresIn: 9_007_199_254_740_991 } : body)
        .payload;
    case 'no-expires': {
      if (!isRecord(body)) return encodeBody(format, body).payload;
      const { expiresIn: _dropped, ...rest } = body;
      return encodeBody(format, rest).payload;
    }
    case 'other-order-id':
      return encodeBody(format, isRecord(body) ? { ...body, orderId: 'ORD-SOMEONE-ELSE' } : body).payload;
  }
}

function swapTypes(body: unknown): unknown {
  if (!isRecord(body)) return 'unexpected';
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) {
    if (typeof value === 'string') out[key] = Number.isNaN(Number(value)) ? 12345 : Number(value);
    else if (typeof value === 'number') out[key] = String(value);
    else if (typeof value === 'boolean') out[key] = value ? 'yes' : 'no';
    else out[key] = 'unexpected';
  }
  return out;
}

function mapPrices(body: unknown, replace: (price: unknown) => string): unknown {
  if (!isRecord(body)) return body;
  const out: Record<string, unknown> = { ...body };
  if ('price' in out) out.price = replace(out.price);
  if (Array.isArray(out.data)) out.data = out.data.map((item) => mapPrices(item, replace));
  return out;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
