import { badRequest } from './errors.js';

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
