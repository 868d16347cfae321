/**
 * Request and response bodies in JSON or msgpack, and the one way an untrusted body (the service's
 * answers, the webhook receiver's deliveries) is decoded: bounded in size by the caller (undici's
 * `maxResponseSize`, Fastify's `bodyLimit`), bounded in depth here, and with no decoder extension.
 */
import { pack, Unpackr } from 'msgpackr';
import { parseJsonExactly, quoteInexactNumbers } from './exact-json.js';

export type WireFormat = 'json' | 'msgpack';
export const WIRE_FORMATS: readonly WireFormat[] = ['json', 'msgpack'];

const MEDIA_TYPES: Record<WireFormat, string> = {
  json: 'application/json',
  msgpack: 'application/msgpack',
};

/**
 * Deepest nesting of arrays and objects an untrusted body may have. The deepest record of the API (a
 * webhook log entry's payload inside a page) is 5 levels; every walk over a decoded body (validation,
 * secret scrubbing, the dedupe key, jsonb) is recursive, so depth is refused before decoding.
 */
export const MAX_NESTING_DEPTH = 32;

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
    return format === 'json'
      ? parseJsonExactly(screenJsonText(bytes.toString('utf8')))
      : decodeMsgpack(bytes);
  } catch (error) {
    throw new BodyDecodeError(`invalid ${format} body: ${withoutExcerpt(error as Error)}`, { cause: error });
  }
}

/**
 * The JSON text ready for a JSON parser: refused when nested deeper than MAX_NESTING_DEPTH or holding a
 * number longer than any amount, otherwise with inexact numbers quoted (exact-json.ts). For the receiver,
 * which keeps Fastify's parser for its checks against prototype poisoning; `decodeBody` for the client.
 */
export function screenJsonText(text: string): string {
  let depth = 0;
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (inString) {
      if (code === BACKSLASH) index++;
      else if (code === QUOTE) inString = false;
    } else if (code === QUOTE) inString = true;
    else if (code === OPEN_BRACKET || code === OPEN_BRACE) {
      if (++depth > MAX_NESTING_DEPTH) throw tooDeep();
    } else if (code === CLOSE_BRACKET || code === CLOSE_BRACE) depth--;
  }
  return quoteInexactNumbers(text);
}

const [QUOTE, BACKSLASH, OPEN_BRACKET, CLOSE_BRACKET, OPEN_BRACE, CLOSE_BRACE] = [...'"\\[]{}'].map((c) =>
  c.charCodeAt(0),
);

function tooDeep(): BodyDecodeError {
  return new BodyDecodeError(`nested deeper than ${MAX_NESTING_DEPTH} levels`);
}

/**
 * msgpackr decodes its own extensions whatever the options: records (0x72), structured-clone references
 * (0x69/0x70, only `structuredClone: false` refuses them), bundled strings (0x62), Sets, Errors, RegExps,
 * typed arrays and big integers. Its public API has no switch for the rest, so the bytes are checked first
 * (`screenMsgpack`) and only plain msgpack, with the standard timestamp, reaches it.
 */
const untrustedUnpackr = new Unpackr({ useRecords: false, structuredClone: false, mapsAsObjects: true });

export function decodeMsgpack(bytes: Uint8Array): unknown {
  screenMsgpack(bytes);
  try {
    return untrustedUnpackr.unpack(bytes);
  } catch (error) {
    throw new BodyDecodeError(withoutExcerpt(error as Error), { cause: error });
  }
}

/** The msgpack timestamp (type -1), the one extension the format itself defines. */
const TIMESTAMP_EXTENSION = 0xff;
const TIMESTAMP_LENGTHS = new Set([4, 8, 12]);

/**
 * Walks one msgpack value without building it: refuses any extension but the timestamp, map keys that are
 * not strings, nesting deeper than MAX_NESTING_DEPTH, lengths beyond the body, and trailing bytes. Every
 * element takes at least one byte, so the walk is linear in the body's size.
 */
function screenMsgpack(bytes: Uint8Array): void {
  let position = 0;
  const take = (count: number): void => {
    if (count > bytes.length - position) throw new BodyDecodeError('msgpack body ends inside a value');
    position += count;
  };
  const readLength = (size: number): number => {
    const start = position;
    take(size);
    let length = 0;
    for (let index = start; index < position; index++) length = length * 256 + bytes[index]!;
    return length;
  };
  const skipExtension = (length: number): void => {
    take(1);
    const type = bytes[position - 1]!;
    if (type !== TIMESTAMP_EXTENSION || !TIMESTAMP_LENGTHS.has(length)) {
      throw new BodyDecodeError(
        `msgpack extension type 0x${type.toString(16).padStart(2, '0')} is not accepted`,
      );
    }
    take(length);
  };
  const skipContainer = (entries: number, isMap: boolean, depth: number): void => {
    if (depth > MAX_NESTING_DEPTH) throw tooDeep();
    if (entries > bytes.length - position) throw new BodyDecodeError('msgpack body ends inside a value');
    for (let entry = 0; entry < entries; entry++) {
      if (isMap) {
        if (!isStringStart(bytes[position])) throw new BodyDecodeError('msgpack map key is not a string');
        skipValue(depth);
      }
      skipValue(depth);
    }
  };
  function skipValue(depth: number): void {
    take(1);
    const token = bytes[position - 1]!;
    if (token <= 0x7f || token >= 0xe0) return; // positive and negative fixints
    if (token <= 0x8f) skipContainer(token & 0x0f, true, depth + 1);
    else if (token <= 0x9f) skipContainer(token & 0x0f, false, depth + 1);
    else if (token <= 0xbf) take(token & 0x1f);
    else {
      const format = MSGPACK_FORMATS.get(token);
      if (format === undefined)
        throw new BodyDecodeError(`msgpack byte 0x${token.toString(16)} is never used`);
      const [kind, size] = format;
      if (kind === 'fixed') take(size);
      else if (kind === 'sized') take(readLength(size));
      else if (kind === 'fixext') skipExtension(size);
      else if (kind === 'ext') skipExtension(readLength(size));
      else skipContainer(readLength(size), kind === 'map', depth + 1);
    }
  }
  skipValue(0);
  if (position !== bytes.length) throw new BodyDecodeError('msgpack body holds more than one value');
}

/**
 * The msgpack formats from 0xc0 on, by first byte: `fixed` takes `size` bytes, `sized` (str, bin) a
 * length of `size` bytes then that many, `fixext`/`ext` a type and `size` bytes (or a length of `size`
 * bytes), `array`/`map` a count of `size` bytes then the members. 0xc1 is never used.
 */
type MsgpackFormat = ['fixed' | 'sized' | 'fixext' | 'ext' | 'array' | 'map', number];
const MSGPACK_FORMATS = new Map<number, MsgpackFormat>([
  [0xc0, ['fixed', 0]], // nil, false, true
  [0xc2, ['fixed', 0]],
  [0xc3, ['fixed', 0]],
  [0xc4, ['sized', 1]], // bin 8, 16, 32
  [0xc5, ['sized', 2]],
  [0xc6, ['sized', 4]],
  [0xc7, ['ext', 1]], // ext 8, 16, 32
  [0xc8, ['ext', 2]],
  [0xc9, ['ext', 4]],
  [0xca, ['fixed', 4]], // float 32, 64
  [0xcb, ['fixed', 8]],
  [0xcc, ['fixed', 1]], // uint 8 to 64
  [0xcd, ['fixed', 2]],
  [0xce, ['fixed', 4]],
  [0xcf, ['fixed', 8]],
  [0xd0, ['fixed', 1]], // int 8 to 64
  [0xd1, ['fixed', 2]],
  [0xd2, ['fixed', 4]],
  [0xd3, ['fixed', 8]],
  [0xd4, ['fixext', 1]], // fixext 1 to 16
  [0xd5, ['fixext', 2]],
  [0xd6, ['fixext', 4]],
  [0xd7, ['fixext', 8]],
  [0xd8, ['fixext', 16]],
  [0xd9, ['sized', 1]], // str 8, 16, 32
  [0xda, ['sized', 2]],
  [0xdb, ['sized', 4]],
  [0xdc, ['array', 2]], // array 16, 32
  [0xdd, ['array', 4]],
  [0xde, ['map', 2]], // map 16, 32
  [0xdf, ['map', 4]],
]);

function isStringStart(token: number | undefined): boolean {
  return token !== undefined && ((token >= 0xa0 && token <= 0xbf) || (token >= 0xd9 && token <= 0xdb));
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
