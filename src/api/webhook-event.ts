/**
 * Parser of an incoming webhook body (`{ event, data }`), already decoded from JSON or msgpack by the
 * receiver. Events are hints (order state is confirmed through tracking), but a malformed one is still
 * refused with the field named so the sender's mistake is visible.
 */
import { webhookEventSchema } from './assumptions.js';
import type { WebhookEvent } from './types.js';
import { validateBody } from './validation.js';

/** Throws ApiBadResponseError (code API_BAD_RESPONSE, operation `webhookEvent`) naming the bad field. */
export function parseWebhookEvent(body: unknown): WebhookEvent {
  return validateBody(webhookEventSchema, body, 'webhookEvent');
}
