/** Public surface of the purchase-service client. Nothing here imports the database or the engine. */
export { formatFxRate } from './arguments.js';
export {
  type CallOptions,
  createPurchaseClient,
  DEFAULT_TIMEOUTS,
  type ListOrdersInput,
  type PurchaseClient,
  type PurchaseClientOptions,
} from './client.js';
export {
  decodeBody,
  decodeMsgpack,
  encodeBody,
  formatOfContentType,
  MAX_NESTING_DEPTH,
  mediaTypeOf,
  screenJsonText,
  WIRE_FORMATS,
  type WireFormat,
} from './codec.js';
export {
  ApiBadResponseError,
  type ApiErrorCode,
  ApiForbiddenError,
  ApiInvalidArgumentError,
  ApiNotFoundError,
  ApiRateLimitedError,
  ApiRejectedError,
  ApiServerError,
  ApiUnauthorizedError,
  ApiUnavailableError,
  isPurchaseApiError,
  OutcomeUnknownError,
  PurchaseApiError,
  QuoteExpiredError,
} from './errors.js';
export type { RequestEvent, RequestObserver } from './exchange.js';
export { DEFAULT_RETRY, RETRIED_ERROR_CODES, type RetrySettings } from './retry-policy.js';
export { createServiceGate, type ServiceGate, type ServiceGateOptions } from './service-gate.js';
export * from './types.js';
export { parseWebhookEvent } from './webhook-event.js';
export { QUOTE_ID_PATTERN } from './wire-fields.js';
