/**
 * The webhook receiver: `POST /webhooks/<secret>` in JSON or msgpack. The secret is checked in constant
 * time before the body is read; the event is validated, stored once (deduplicated by its content) and only
 * then answered 2xx, so that the service retries anything we did not keep. The path is never logged: every
 * line names the route `/webhooks/:secret`.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Unpackr } from 'msgpackr';
import {
  parseWebhookEvent,
  quoteInexactNumbers,
  WEBHOOK_EVENT_KINDS,
  type WebhookEvent,
} from '../api/index.js';
import type { TrackingSettings } from '../config/tracking-schema.js';
import type { Database } from '../db/index.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { callDatabase } from './database-call.js';
import { webhookDedupeKey } from './dedupe-key.js';
import { orderIdOf } from './event-order.js';
import type { EventProcessor } from './event-processor.js';
import { createSecretCheck, REDACTED_WEBHOOK_ROUTE } from './secret.js';

export interface ReceiverRouteDeps {
  database: Database;
  processor: Pick<EventProcessor, 'accept'>;
  metrics: Metrics;
  databaseTimeoutMs: number;
  logger: Logger;
  secret: string;
  settings: TrackingSettings['receiver'];
  clock: () => Date;
}

const MSGPACK_TYPES = ['application/msgpack', 'application/x-msgpack'];
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true });
const route = REDACTED_WEBHOOK_ROUTE;

type Rejection = { status: 400 | 401 | 413 | 415; error: string; message?: string };

/** Registers the route in its own encapsulated scope, so its parsers and error handling stay its own. */
export function registerReceiverRoute(app: FastifyInstance, deps: ReceiverRouteDeps): void {
  const isSecret = createSecretCheck(deps.secret);
  const reject = (reply: FastifyReply, kind: string, rejection: Rejection) => {
    deps.metrics.webhookEvents.inc({ kind, result: 'rejected' });
    deps.logger.warn(
      { route, status: rejection.status, kind, reason: rejection.message ?? rejection.error },
      'webhook rejected',
    );
    const body = rejection.message
      ? { error: rejection.error, message: rejection.message }
      : { error: rejection.error };
    return reply.code(rejection.status).send(body);
  };

  void app.register(async (scope) => {
    // JSON and msgpack only (fastify would also take text/plain).
    scope.removeContentTypeParser('text/plain');
    // JSON.parse rounds a number past 15 significant digits to the nearest double, so a long amount would
    // be stored altered: such numbers are read as decimal text instead. Fastify's own parser still parses,
    // so its 400 for a malformed body and its refusal of prototype-poisoning keys stay.
    const parseJson = scope.getDefaultJsonParser('error', 'error');
    scope.removeContentTypeParser('application/json');
    scope.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) =>
      parseJson(request, quoteInexactNumbers(body as string), done),
    );
    scope.addContentTypeParser(MSGPACK_TYPES, { parseAs: 'buffer' }, (_request, body, done) => {
      try {
        done(null, unpackr.unpack(body as Buffer));
      } catch (error) {
        done(Object.assign(new Error('body is not valid msgpack', { cause: error }), { statusCode: 400 }));
      }
    });

    scope.setErrorHandler((error: { statusCode?: number; message?: string }, _request, reply) => {
      const status = error.statusCode;
      if (status === 413) return reject(reply, 'unknown', { status, error: 'payload_too_large' });
      if (status === 415) return reject(reply, 'unknown', { status, error: 'unsupported_media_type' });
      if (status === 400)
        return reject(reply, 'unknown', { status, error: 'bad_request', message: error.message });
      deps.logger.error({ route, err: error }, 'webhook receiver failed');
      return reply.code(500).send({ error: 'internal_error' });
    });

    // Before the body is read: a caller without the secret learns nothing and costs no parsing.
    scope.addHook('onRequest', async (request, reply) => {
      const secret = (request.params as Record<string, string | undefined>)['*'];
      if (secret === undefined || !isSecret(secret))
        return reject(reply, 'unknown', { status: 401, error: 'unauthorized' });
    });

    // A wildcard, not `:secret`: Fastify refuses a parameter over 100 characters with a 414 whose body
    // quotes the path, and the settings accept a secret of any length from 16.
    scope.post('/webhooks/*', { bodyLimit: deps.settings.bodyLimitBytes }, (request, reply) =>
      receive(deps, request, reply, reject),
    );
  });
}

async function receive(
  deps: ReceiverRouteDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  reject: (reply: FastifyReply, kind: string, rejection: Rejection) => FastifyReply,
) {
  const body = request.body as { event?: unknown; data?: unknown } | undefined;
  const kindLabel = knownKind(body?.event);
  let event: WebhookEvent;
  try {
    event = parseWebhookEvent(body);
  } catch (error) {
    return reject(reply, kindLabel, { status: 400, error: 'bad_event', message: (error as Error).message });
  }
  const stored = {
    dedupeKey: webhookDedupeKey(event.event, body?.data),
    kind: event.event,
    serviceOrderId: orderIdOf(event),
  };
  let result: 'stored' | 'duplicate';
  try {
    result = await callDatabase(deps, 'webhook_store', () =>
      deps.database.webhookEvents.store({ ...stored, payload: body, receivedAt: deps.clock() }),
    );
  } catch (error) {
    // Not kept, so not acknowledged: the service's retry brings it again.
    deps.metrics.webhookEvents.inc({ kind: event.event, result: 'failed' });
    deps.logger.error({ route, kind: event.event, err: error }, 'webhook event could not be stored');
    return reply.code(503).send({ error: 'unavailable' });
  }
  deps.metrics.webhookEvents.inc({ kind: event.event, result });
  deps.logger.info(
    { route, kind: event.event, orderId: stored.serviceOrderId, result },
    'webhook event received',
  );
  if (result === 'stored') deps.processor.accept(stored);
  return reply.code(200).send({ result });
}

function knownKind(value: unknown): string {
  return typeof value === 'string' && (WEBHOOK_EVENT_KINDS as readonly string[]).includes(value)
    ? value
    : 'unknown';
}
