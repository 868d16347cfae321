import type { FastifyInstance, FastifyRequest } from 'fastify';
import { pack, unpack } from 'msgpackr';
import { SandboxHttpError } from './errors.js';

export type WireFormat = 'json' | 'msgpack';

const MSGPACK_TYPES = ['application/msgpack', 'application/x-msgpack'];
const JSON_TYPE = 'application/json';
const MSGPACK_TYPE = 'application/msgpack';

export interface EncodedBody {
  payload: string | Buffer;
  contentType: string;
}

/**
 * The answer's format: what Accept names first, else the format the request body came in, else JSON.
 * An Accept the sandbox cannot honour falls back to JSON rather than 406, like most services do.
 */
export function negotiateFormat(request: FastifyRequest): WireFormat {
  const accept = request.headers.accept;
  if (accept !== undefined) {
    if (MSGPACK_TYPES.some((type) => accept.includes(type))) return 'msgpack';
    if (accept.includes(JSON_TYPE)) return 'json';
  }
  const contentType = request.headers['content-type'];
  if (contentType !== undefined && MSGPACK_TYPES.some((type) => contentType.startsWith(type)))
    return 'msgpack';
  return 'json';
}

export function encodeBody(format: WireFormat, body: unknown): EncodedBody {
  if (format === 'msgpack') return { payload: pack(body), contentType: MSGPACK_TYPE };
  return { payload: JSON.stringify(body), contentType: `${JSON_TYPE}; charset=utf-8` };
}

/**
 * Leaves JSON and msgpack as the only body formats. fastify's JSON parser already answers 400 for bad JSON
 * and 413 above the body limit, and fastify answers 415 for a content type no parser takes. msgpackr's
 * default unpacker never uses records.
 */
export function registerMsgpackParser(app: FastifyInstance): void {
  // fastify also accepts text/plain by default; the service speaks only JSON and msgpack.
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser(MSGPACK_TYPES, { parseAs: 'buffer' }, (_request, body, done) => {
    try {
      done(null, unpack(body as Buffer));
    } catch (error) {
      done(new SandboxHttpError(400, 'request body is not valid msgpack', { cause: error }), undefined);
    }
  });
}
