import { pack, unpack } from 'msgpackr';
import { parseJsonExactly } from './exact-json.js';

export type WireFormat = 'json' | 'msgpack';
export const WIRE_FORMATS: readonly WireFormat[] = ['json', 'msgpack'];

const MEDIA_TYPES: Record<WireFormat, string> = {
  json: 'application/json',
  msgpack: 'application/msgpack',
};

export function mediaTypeOf(format: WireFormat): string {
  return MEDIA_TYPES[format];
}

/**
 * msgpackr's module-level `pack`/`unpack` use `useRecords: false`: plain maps on the wire that any msgpack
 * peer can read, never msgpackr's private record extension.
 */
export function encodeBody(format: WireFormat, value: unknown): Buffer {
  return format === 'json' ? Buffer.from(JSON.stringify(value), 'utf8') : pack(value);
}

export class BodyDecodeError extends Error {
  override readonly name = 'BodyDecodeError';
}

/**
 * Decodes by the response's own Content-Type when it names a known format (a server may answer errors in
 * JSON whatever was asked), otherwise by the format that was requested.
 */
export function decodeBody(bytes: Buffer, contentType: string | undefined, requested: WireFormat): unknown {
  const format = formatOfContentType(contentType) ?? requested;
  if (bytes.length === 0) throw new BodyDecodeError(`empty ${format} body`);
  try {
    return format === 'json' ? parseJsonExactly(bytes.toString('utf8')) : unpack(bytes);
  } catch (error) {
    throw new BodyDecodeError(`invalid ${format} body: ${withoutExcerpt(error as Error)}`, { cause: error });
  }
}

/**
 * V8 and msgpackr quote a slice of the broken body in their messages. A slice can hold part of a secret the
 * service echoed, which no later scrubbing of the whole secret would catch, so the slice is cut out of the
 * message and the stack of the kept error itself.
 */
function withoutExcerpt(error: Error): string {
  const message = String(error.message);
  const cleaned = message
    .replace(/, (?:\.\.\.)?"[\s\S]*"(?:\.\.\.)? is not valid JSON$/, ' (not valid JSON)')
    .replace(/(end of buffer not reached)[\s\S]*$/, '$1');
  if (cleaned !== message) {
    error.stack = error.stack?.replace(message, () => cleaned);
    error.message = cleaned;
  }
  return cleaned;
}

export function formatOfContentType(contentType: string | undefined): WireFormat | undefined {
  const mediaType = contentType?.split(';')[0]?.trim().toLowerCase();
  if (mediaType === MEDIA_TYPES.json) return 'json';
  if (mediaType === MEDIA_TYPES.msgpack || mediaType === 'application/x-msgpack') return 'msgpack';
  return undefined;
}
