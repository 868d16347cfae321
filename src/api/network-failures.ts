/**
 * Turns a failed exchange (no usable answer) into the taxonomy. The question that matters is whether the
 * request could have reached the service: a connect failure leaves nothing behind, anything later may have.
 */
import {
  ApiBadResponseError,
  ApiUnavailableError,
  isPurchaseApiError,
  OutcomeUnknownError,
  type PurchaseApiError,
} from './errors.js';

/** Failures before a connection existed: the request never left this process. */
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_CLOSED',
  'UND_ERR_DESTROYED',
]);

const DESCRIPTIONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host lookup failed',
  UND_ERR_CONNECT_TIMEOUT: 'connect timeout',
  UND_ERR_CLOSED: 'client already closed',
  UND_ERR_DESTROYED: 'client already closed',
  UND_ERR_HEADERS_TIMEOUT: 'timed out waiting for the response headers',
  UND_ERR_BODY_TIMEOUT: 'timed out reading the response body',
  UND_ERR_SOCKET: 'connection closed by the other side',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection broken while sending',
  UND_ERR_RES_EXCEEDED_MAX_SIZE: 'response body too large',
  UND_ERR_RES_CONTENT_LENGTH_MISMATCH: 'response shorter than announced',
  ABORTED: "aborted at the caller's deadline",
};

interface FailedRequest {
  operation: string;
  method: string;
  path: string;
  createsOrder: boolean;
  /** Set when the status line arrived before the failure (the body broke). */
  status?: number | undefined;
  signal?: AbortSignal | undefined;
}

export function classifyNetworkFailure(error: unknown, request: FailedRequest): PurchaseApiError {
  if (isPurchaseApiError(error)) return error;
  const code = request.signal?.aborted ? 'ABORTED' : errorCodeOf(error);
  const what = DESCRIPTIONS[code] ?? code;
  const where = `${request.operation} (${request.method} ${request.path})`;
  const details = { operation: request.operation, status: request.status, cause: error };
  if (NOT_SENT_CODES.has(code)) {
    return new ApiUnavailableError(`${where}: purchase service unreachable: ${what}`, details);
  }
  if (request.createsOrder) {
    return new OutcomeUnknownError(
      `${where}: ${what} after the order request was sent; the order may exist and must be reconciled`,
      details,
    );
  }
  if (code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE') {
    return new ApiBadResponseError(`${where}: ${what}`, { ...details, field: '(body)' });
  }
  return new ApiUnavailableError(`${where}: ${what}`, details);
}

/**
 * undici errors carry a stable `code`; Node's socket errors too, but a dual-stack connect attempt may
 * reject with an AggregateError whose members hold the codes.
 */
function errorCodeOf(error: unknown): string {
  if (typeof error !== 'object' || error === null) return 'UNKNOWN';
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  if (error instanceof AggregateError) {
    for (const inner of error.errors) {
      const innerCode = errorCodeOf(inner);
      if (innerCode !== 'UNKNOWN') return innerCode;
    }
  }
  return error instanceof Error ? error.name : 'UNKNOWN';
}
