/**
 * The webhook receiver: `POST /webhooks/<secret>` in JSON or msgpack. The secret is checked in constant
 * time before the body is read; the event is validated, stored once (deduplicated by its content) and only
 * then answered 2xx, so that the service retries anything we did not keep. The path is never logged: every
 * line names the route `/webhooks/:secret`.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  decodeMsgpack,
  parseWebhookEvent,
  screenJsonText,
  WEBHOOK_EVENT_KINDS,
  type WebhookEvent,
} from '../api/index.js';
import type { TrackingSettings } from '../config/schema.js';
import type { Database } from '../db/index.js';
import { isDecimal, toDecimalText } from '../money.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { callDatabase } from './database-call.js';
import { createEventProcessor, type EventProcessor } from './event-processor.js';
import type { Tracker } from './tracker.js';

export interface WebhookReceiverDeps {
  database: Database;
  tracker: Pick<Tracker, 'nudge'>;
  metrics: Metrics;
  /** engine.databaseTimeoutMs: no database call of the receiver waits longer. */
  databaseTimeoutMs: number;
  logger: Logger;
  /** TREASURY_WEBHOOK_SECRET: the path segment every delivery must carry. */
  secret: string;
  settings: TrackingSettings;
  clock?: () => Date;
}

export interface WebhookReceiver {
  /** Adds `POST /webhooks/:secret` to the worker's HTTP server; call before it listens. */
  register(app: FastifyInstance): void;
  /** Starts the sweep of stored events not processed yet. Idempotent. */
  start(): void;
  /** Stops the sweep and waits for events in processing. Idempotent. */
  stop(): Promise<void>;
  /** One sweep now; resolves to the number of events looked at. */
  sweep(): Promise<number>;
  /** Resolves when no stored event is being processed. */
  idle(): Promise<void>;
}

export function createWebhookReceiver(deps: WebhookReceiverDeps): WebhookReceiver {
  const clock = deps.clock ?? (() => new Date());
  const processor = createEventProcessor({
    database: deps.database,
    tracker: deps.tracker,
    metrics: deps.metrics,
    databaseTimeoutMs: deps.databaseTimeoutMs,
    logger: deps.logger,
    settings: deps.settings.receiver,
    clock,
  });
  return {
    register(app) {
      registerReceiverRoute(app, {
        database: deps.database,
        processor,
        metrics: deps.metrics,
        databaseTimeoutMs: deps.databaseTimeoutMs,
        logger: deps.logger,
        secret: deps.secret,
        settings: deps.settings.receiver,
        clock,
      });
    },
    start: () => processor.start(),
    stop: () => processor.stop(),
    sweep: () => processor.sweep(),
    idle: () => processor.idle(),
  };
}

interface ReceiverRouteDeps {
  database: Database;
  processor: Pick<EventProcessor, 'accept'>;
  metrics: Metrics;
  databaseTimeoutMs: number;
  logger: Logger;
  secret: string;
  settings: TrackingSettings['receiver'];
  clock: () => Date;
}

/** The receiver's path as it may appear in logs and metrics. */
export const REDACTED_WEBHOOK_ROUTE = '/webhooks/:secret';
const MSGPACK_TYPES = ['application/msgpack', 'application/x-msgpack'];
const route = REDACTED_WEBHOOK_ROUTE;

type Rejection = { status: 400 | 401 | 413 | 415; error: string; message?: string };

/** Registers the route in its own encapsulated scope, so its parsers and error handling stay its own. */
function registerReceiverRoute(app: FastifyInstance, deps: ReceiverRouteDeps): void {
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
    // Bodies are untrusted: both formats go through the api codec's screens (depth, number length, no
    // msgpack extension) before any parser builds a value. JSON numbers a double would round are read as
    // decimal text. Fastify's own JSON parser still parses, so its 400 for a malformed body and its refusal
    // of prototype-poisoning keys stay.
    const parseJson = scope.getDefaultJsonParser('error', 'error');
    const badBody = (format: string, error: unknown) =>
      Object.assign(new Error(`body is not valid ${format}: ${(error as Error).message}`, { cause: error }), {
        statusCode: 400,
      });
    scope.removeContentTypeParser('application/json');
    scope.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
      let screened: string;
      try {
        screened = screenJsonText(body as string);
      } catch (error) {
        return done(badBody('JSON', error));
      }
      parseJson(request, screened, done);
    });
    scope.addContentTypeParser(MSGPACK_TYPES, { parseAs: 'buffer' }, (_request, body, done) => {
      try {
        done(null, decodeMsgpack(body as Buffer));
      } catch (error) {
        done(badBody('msgpack', error));
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
  // Only the validated event goes further: fields we do not know are neither keyed, stored nor swept.
  const stored = {
    dedupeKey: webhookDedupeKey(event.event, event.data),
    kind: event.event,
    serviceOrderId: orderIdOf(event),
  };
  let result: 'stored' | 'duplicate';
  try {
    result = await callDatabase(deps, 'webhook_store', () =>
      deps.database.webhookEvents.store({ ...stored, payload: event, receivedAt: deps.clock() }),
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

/**
 * Builds the receiver's secret check. Both sides are hashed first so that the comparison always runs over
 * 32 bytes: timingSafeEqual needs equal lengths, and comparing lengths first would leak the secret's length.
 */
export function createSecretCheck(secret: string): (candidate: string) => boolean {
  const expected = digest(secret);
  return (candidate) => timingSafeEqual(digest(candidate), expected);
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** The path the service is told to deliver to; never logged. */
export function webhookUrl(publicUrl: string, secret: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/webhooks/${encodeURIComponent(secret)}`;
}

/** The service's id of the order an event is about; `quote` events name none. */
export function orderIdOf(event: WebhookEvent): string | null {
  switch (event.event) {
    case 'order':
      return event.data.id;
    case 'quote':
      return null;
    default:
      return event.data.orderId;
  }
}

/**
 * The identity of a webhook event: sha256 over its kind and its validated data in a canonical form (keys
 * sorted, amounts as decimal text, dates as ISO text). The same event redelivered, in JSON or in msgpack,
 * with or without fields we do not know, gets the same key; the key is what the database's unique index
 * dedupes on, and what the backfill matches log entries by.
 */
export function webhookDedupeKey(kind: string, data: unknown): string {
  return createHash('sha256')
    .update(kind)
    .update('\n')
    .update(JSON.stringify(canonical(data)))
    .digest('hex');
}

function canonical(value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value.toISOString();
  if (isDecimal(value)) return toDecimalText(value);
  if (Array.isArray(value)) return value.map(canonical);
  if (typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const member = (value as Record<string, unknown>)[key];
      if (member !== undefined) out[key] = canonical(member);
    }
    return out;
  }
  return value;
}
