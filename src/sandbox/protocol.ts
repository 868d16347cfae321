/**
 * The sandbox's side of the wire protocol, as every route uses it: the errors it answers on purpose, JSON or
 * msgpack bodies, query parameters and pagination (tokens and accounts: accounts.ts).
 */
import { STATUS_CODES } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { pack, unpack } from 'msgpackr';

/**
 * An answer the sandbox gives on purpose (400, 401, 403, 404, 409). Everything else that escapes a handler is
 * a sandbox defect and is answered as a plain 500 without details.
 */
export class SandboxHttpError extends Error {
  override readonly name = 'SandboxHttpError';
  readonly code: string;
  constructor(
    readonly statusCode: number,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.code = `SANDBOX_HTTP_${statusCode}`;
  }
}

export function badRequest(message: string): SandboxHttpError {
  return new SandboxHttpError(400, message);
}

export function notFound(message: string): SandboxHttpError {
  return new SandboxHttpError(404, message);
}

/** The error body of the assumptions table: `{ statusCode, error, message }`. */
export interface ErrorBody {
  statusCode: number;
  error: string;
  message: string;
}

export function errorBody(statusCode: number, message: string): ErrorBody {
  return { statusCode, error: STATUS_CODES[statusCode] ?? 'Error', message };
}

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

/** One optional string query parameter; 400 when it is repeated. */
export function readStringParam(query: Record<string, unknown>, name: string): string | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw badRequest(`${name} must be given once as a string`);
  return value;
}

export function requireStringParam(query: Record<string, unknown>, name: string): string {
  const value = readStringParam(query, name);
  if (value === undefined || value === '') throw badRequest(`${name} is required`);
  return value;
}

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

/** An ISO 8601 date-time with a zone, or a bare date (midnight UTC), as epoch ms. */
export function readInstantParam(query: Record<string, unknown>, name: string): number | undefined {
  const value = readStringParam(query, name);
  if (value === undefined || value === '') return undefined;
  const ms = ISO_INSTANT.test(value) || /^\d{4}-\d{2}-\d{2}$/.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(ms))
    throw badRequest(`${name} must be an ISO 8601 date-time (got ${JSON.stringify(value)})`);
  return ms;
}

/** The request body as a plain object; 400 for anything else (missing, array, scalar). */
export function readBodyObject(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw badRequest('request body must be an object');
  }
  return body as Record<string, unknown>;
}

export interface PageRequest {
  page: number;
  limit: number;
}

export interface IntRule {
  default: number;
  min: number;
  max: number;
  /** Outside [min, max]: clamp instead of answering 400. */
  clamp?: boolean;
}

/**
 * Reads one integer query parameter; 400 for anything but plain digits, or out of range unless clamped.
 * Any number of digits is read (a long one becomes Infinity), so a clamped parameter clamps them all.
 */
export function readIntParam(query: Record<string, unknown>, name: string, rule: IntRule): number {
  const raw = query[name];
  if (raw === undefined || raw === '') return rule.default;
  if (typeof raw !== 'string' || !/^-?\d+$/.test(raw)) {
    throw badRequest(`${name} must be an integer (got ${JSON.stringify(raw)})`);
  }
  const value = Number(raw);
  if (value >= rule.min && value <= rule.max) return value;
  if (rule.clamp) return Math.min(rule.max, Math.max(rule.min, value));
  throw badRequest(`${name} must be between ${rule.min} and ${rule.max} (got ${value})`);
}

export interface Page<T> {
  data: T[];
  pagination: { page: number; limit: number; total: number; totalPages: number };
}

export function paginate<T, R>(items: T[], request: PageRequest, map: (item: T) => R): Page<R> {
  const start = (request.page - 1) * request.limit;
  return {
    data: items.slice(start, start + request.limit).map(map),
    pagination: {
      page: request.page,
      limit: request.limit,
      total: items.length,
      totalPages: Math.ceil(items.length / request.limit),
    },
  };
}
