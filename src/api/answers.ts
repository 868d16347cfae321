/**
 * Reads the service's answer: a 2xx body is decoded and validated into a domain value; any other status
 * becomes the error class that says what the caller should do.
 */
import type { z } from 'zod';
import { saysQuoteExpired } from './assumptions.js';
import { decodeBody, type WireFormat } from './codec.js';
import {
  ApiBadResponseError,
  ApiForbiddenError,
  ApiNotFoundError,
  ApiRateLimitedError,
  ApiRejectedError,
  ApiServerError,
  ApiUnauthorizedError,
  OutcomeUnknownError,
  type PurchaseApiError,
  QuoteExpiredError,
} from './errors.js';
import { scrubSecret } from './secret-scrub.js';
import type { WireAnswer, WireRequest } from './transport.js';
import { validateBody } from './validation.js';

export interface AnswerContext {
  request: WireRequest;
  format: WireFormat;
  /** Scrubbed from anything an error keeps, in case the service ever echoes it. */
  token: string;
}

export function readAnswer<T>(answer: WireAnswer, schema: z.ZodType<T>, context: AnswerContext): T {
  const { request } = context;
  if (answer.status < 200 || answer.status >= 300) throw errorForStatus(answer, context);
  try {
    // The token has no business in an answer; removing it first keeps it out of every message below.
    const body = scrubSecret(decodeSuccessBody(answer, context), context.token);
    return validateBody(schema, body, request.operation, answer.status);
  } catch (error) {
    if (!request.createsOrder) throw error;
    // The service said yes but we cannot read which order it made: only reconciliation can tell.
    throw new OutcomeUnknownError(
      `${request.operation}: the service accepted the order request (${answer.status}) but its answer is unreadable; the order must be reconciled`,
      { operation: request.operation, status: answer.status, cause: error },
    );
  }
}

function decodeSuccessBody(answer: WireAnswer, { request, format }: AnswerContext): unknown {
  try {
    return decodeBody(answer.bytes, answer.contentType, format);
  } catch (error) {
    throw new ApiBadResponseError(`${request.operation}: bad response: ${(error as Error).message}`, {
      operation: request.operation,
      status: answer.status,
      field: '(body)',
      cause: error,
    });
  }
}

function errorForStatus(answer: WireAnswer, context: AnswerContext): PurchaseApiError {
  const { request, token } = context;
  const body = shortenText(scrubSecret(decodeErrorBody(answer, context.format), token));
  const details = { operation: request.operation, status: answer.status, body };
  const where = `${request.operation} (${request.method} ${request.path})`;
  const said = describeErrorBody(body);
  const status = answer.status;
  if (status === 400) {
    if (saysQuoteExpired(body)) return new QuoteExpiredError(`${where}: quote expired (400)${said}`, details);
    return new ApiRejectedError(`${where}: rejected by the service (400)${said}`, details);
  }
  if (status === 401) return new ApiUnauthorizedError(`${where}: token missing or invalid (401)`, details);
  if (status === 403) {
    return new ApiForbiddenError(`${where}: token lacks permission for this resource (403)`, details);
  }
  if (status === 404) return new ApiNotFoundError(`${where}: not found (404)${said}`, details);
  if (status >= 500) {
    if (request.createsOrder) {
      return new OutcomeUnknownError(
        `${where}: server error (${status}) on the order request; the order may exist and must be reconciled`,
        details,
      );
    }
    return new ApiServerError(`${where}: server error (${status})${said}`, details);
  }
  // Rate limiting: the request was turned away before any work (an order request too: nothing was created).
  if (status === 429) {
    const waitMs = retryAfterMs(answer.retryAfter, Date.now());
    const after = waitMs === undefined ? '' : `; retry after ${waitMs} ms`;
    return new ApiRateLimitedError(`${where}: rate limited (429)${after}`, details, waitMs);
  }
  if (status >= 400)
    return new ApiRejectedError(`${where}: rejected by the service (${status})${said}`, details);
  return new ApiBadResponseError(`${where}: unexpected status ${status}`, { ...details, field: '(status)' });
}

const MAX_KEPT_TEXT = 500;

/** Error bodies are informative only (the reference does not fix their shape), so decoding is best effort. */
function decodeErrorBody(answer: WireAnswer, format: WireFormat): unknown {
  if (answer.bytes.length === 0) return undefined;
  try {
    return decodeBody(answer.bytes, answer.contentType, format);
  } catch {
    return answer.bytes.toString('utf8');
  }
}

/** Cut only after scrubbing: a cut through an echoed token would leave a prefix no scrub recognises. */
function shortenText(body: unknown): unknown {
  return typeof body === 'string' && body.length > MAX_KEPT_TEXT ? body.slice(0, MAX_KEPT_TEXT) : body;
}

function describeErrorBody(body: unknown): string {
  let text: string | undefined;
  if (typeof body === 'string') text = body;
  else if (typeof body === 'object' && body !== null && 'message' in body) {
    text = String((body as { message: unknown }).message);
  }
  if (!text) return '';
  return `: ${text.length > 200 ? `${text.slice(0, 200)}…` : text}`;
}

/** Retry-After as milliseconds from `now`: delay-seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(header: string | undefined, now: number): number | undefined {
  if (header === undefined) return undefined;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
