/**
 * The error taxonomy of the purchase-service client. Each class implies a reaction, carried in the type so
 * that callers branch on data instead of parsing messages:
 * - `retryable`: the same request may succeed later (transient network or server trouble);
 * - `outcomeUnknown`: an order request may have reached the service; never repeat it blindly, reconcile.
 * Vendor errors (undici, zod, msgpackr) are converted at the adapter and kept as `cause`.
 */
import { inspect } from 'node:util';
import { TreasuryError } from '../errors.js';

export type ApiErrorCode =
  | 'API_REJECTED'
  | 'QUOTE_EXPIRED'
  | 'API_UNAUTHORIZED'
  | 'API_FORBIDDEN'
  | 'API_NOT_FOUND'
  | 'API_SERVER_ERROR'
  | 'API_UNAVAILABLE'
  | 'API_RATE_LIMITED'
  | 'OUTCOME_UNKNOWN'
  | 'API_BAD_RESPONSE'
  | 'API_INVALID_ARGUMENT';

export interface ApiErrorDetails {
  /** Client operation name (`getQuote`, `createOrder`, …). */
  operation: string;
  /** HTTP status when the service answered. */
  status?: number;
  /** Decoded error body (or its text, shortened) when the service sent one; scrubbed of the token. */
  body?: unknown;
  cause?: unknown;
}

export abstract class PurchaseApiError extends TreasuryError {
  abstract override readonly code: ApiErrorCode;
  abstract readonly retryable: boolean;
  readonly outcomeUnknown: boolean = false;
  readonly operation: string;
  readonly status: number | undefined;
  readonly body: unknown;

  constructor(message: string, details: ApiErrorDetails) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.operation = details.operation;
    this.status = details.status;
    this.body = details.body;
  }

  /** What JSON.stringify and error serializers see: stable fields only, never request headers. */
  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      code: this.code,
      message: this.message,
      operation: this.operation,
      status: this.status,
      retryable: this.retryable,
      outcomeUnknown: this.outcomeUnknown,
      body: this.body,
    };
  }

  /** util.inspect (console.log, vitest) prints the same safe view plus the cause chain's messages. */
  [inspect.custom](): string {
    const causeMessage = this.cause instanceof Error ? ` (cause: ${this.cause.message})` : '';
    return `${this.name} [${this.code}] ${this.message}${causeMessage}`;
  }
}

/**
 * The base of each error class below: the name of the error's own class, the code, and whether the same
 * request may succeed later.
 */
function apiError<C extends ApiErrorCode>(code: C, retryable: boolean) {
  return class extends PurchaseApiError {
    override readonly name: string = this.constructor.name;
    readonly code = code;
    readonly retryable = retryable;
  };
}

/** 400: the service refused the parameters. Do not repeat unchanged. (QuoteExpiredError narrows the code.) */
export class ApiRejectedError extends apiError<ApiErrorCode>('API_REJECTED', false) {}

/** 400 whose message says the quote expired: fetch a fresh quote, within the caller's bound. */
export class QuoteExpiredError extends ApiRejectedError {
  override readonly code = 'QUOTE_EXPIRED';
}

/** 401: the token is missing or invalid. Stop and alert; retrying cannot help. */
export class ApiUnauthorizedError extends apiError('API_UNAUTHORIZED', false) {}

/** 403: the token lacks permission for the resource (e.g. a read-only token placing an order). */
export class ApiForbiddenError extends apiError('API_FORBIDDEN', false) {}

export class ApiNotFoundError extends apiError('API_NOT_FOUND', false) {}

/** 5xx on a request that changes nothing (or whose failure is certain): worth trying again later. */
export class ApiServerError extends apiError('API_SERVER_ERROR', true) {}

/** Timeouts, resets and connect failures where nothing was created: try again later. */
export class ApiUnavailableError extends apiError('API_UNAVAILABLE', true) {}

/**
 * 429: the service turned the request away before doing anything, and may say for how long
 * (`Retry-After`). Safe to repeat later, the order request included: nothing was created.
 */
export class ApiRateLimitedError extends apiError('API_RATE_LIMITED', true) {
  constructor(
    message: string,
    details: ApiErrorDetails,
    /** From Retry-After (seconds or an HTTP date); undefined when the service did not say. */
    readonly retryAfterMs?: number,
  ) {
    super(message, details);
  }
}

/**
 * The order request may have reached the service (timeout or reset after sending, 5xx, unreadable 2xx).
 * The order may exist: mark the attempt unsure and reconcile against the order list; never resend it.
 */
export class OutcomeUnknownError extends apiError('OUTCOME_UNKNOWN', false) {
  override readonly outcomeUnknown = true;
}

/** The base of an error about one field of the request or the answer, named in `field`. */
function apiFieldError<C extends ApiErrorCode>(code: C, retryable: boolean) {
  return class extends apiError(code, retryable) {
    readonly field: string;

    constructor(message: string, details: ApiErrorDetails & { field: string }) {
      super(message, details);
      this.field = details.field;
    }

    override toJSON(): Record<string, unknown> {
      return { ...super.toJSON(), field: this.field };
    }
  };
}

/** A response that does not match the expected shape; `field` names the offending path. */
export class ApiBadResponseError extends apiFieldError('API_BAD_RESPONSE', false) {}

/** An argument refused before any request was sent; `field` names it. */
export class ApiInvalidArgumentError extends apiFieldError('API_INVALID_ARGUMENT', false) {
  constructor(message: string, details: { operation: string; field: string }) {
    super(message, { operation: details.operation, field: details.field });
  }
}

export function isPurchaseApiError(error: unknown): error is PurchaseApiError {
  return error instanceof PurchaseApiError;
}
