/**
 * The webhook receiver: every account with a secret has its own path, `POST /webhooks/<account>/<secret>`
 * (the account `default` keeps `/webhooks/<secret>`), in JSON or msgpack. The path's secret is checked in
 * constant time against that account's secret alone, before the body is read; the event is validated,
 * stored once per account (deduplicated by its content) and only then answered 2xx, so that the service
 * retries anything we did not keep. An event is the account's: it is stored under it and nudges only its
 * orders. The path is never logged: every line names the route with `:secret` (and the account when it is
 * one of ours).
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
import { DEFAULT_ACCOUNT } from '../strategy/index.js';
import { callDatabase } from './database-call.js';
import { createEventProcessor, type EventProcessor } from './event-processor.js';
import type { Tracker } from './tracker.js';

/** An account the receiver takes deliveries for. */
export interface ReceivingAccount {
  name: string;
  /** The account's webhook secret: the path segment its deliveries carry. */
  secret: string;
  /** The account's tracker: an event on the account's path nudges it, and no other. */
  tracker: Pick<Tracker, 'nudge'>;
}

export interface WebhookReceiverDeps {
  database: Database;
  /** Every account with a webhook secret, each on its own path. */
  accounts: readonly ReceivingAccount[];
  metrics: Metrics;
  /** engine.databaseTimeoutMs: no database call of the receiver waits longer. */
  databaseTimeoutMs: number;
  logger: Logger;
  settings: TrackingSettings;
  clock?: () => Date;
}

export interface WebhookReceiver {
  /** Adds the accounts' `POST /webhooks/…` paths to the worker's HTTP server; call before it listens. */
  register(app: FastifyInstance): void;
  /** Starts the sweeps of stored events not processed yet. Idempotent. */
  start(): void;
  /** Stops the sweeps and waits for events in processing. Idempotent. */
  stop(): Promise<void>;
  /** One sweep of every account now; resolves to the number of events looked at. */
  sweep(): Promise<number>;
  /** Resolves when no stored event is being processed. */
  idle(): Promise<void>;
}

/** One account's path: its secret check and the processing of its events. */
interface Endpoint {
  account: string;
  isSecret: (candidate: string) => boolean;
  processor: Pick<EventProcessor, 'accept'>;
}

export function createWebhookReceiver(deps: WebhookReceiverDeps): WebhookReceiver {
  const clock = deps.clock ?? (() => new Date());
  const processors = deps.accounts.map((account) =>
    createEventProcessor({
      account: account.name,
      database: deps.database,
      tracker: account.tracker,
      metrics: deps.metrics,
      databaseTimeoutMs: deps.databaseTimeoutMs,
      logger: deps.logger,
      settings: deps.settings.receiver,
      clock,
    }),
  );
  const endpoints = new Map<string, Endpoint>(
    deps.accounts.map((account, index) => [
      account.name,
      { account: account.name, isSecret: createSecretCheck(account.secret), processor: processors[index]! },
    ]),
  );
  const sum = (counts: number[]) => counts.reduce((total, count) => total + count, 0);
  return {
    register(app) {
      registerReceiverRoute(app, {
        database: deps.database,
        endpoints,
        metrics: deps.metrics,
        databaseTimeoutMs: deps.databaseTimeoutMs,
        logger: deps.logger,
        settings: deps.settings.receiver,
        clock,
      });
    },
    start: () => {
      for (const processor of processors) processor.start();
    },
    stop: async () => {
      await Promise.all(processors.map((processor) => processor.stop()));
    },
    sweep: async () => sum(await Promise.all(processors.map((processor) => processor.sweep()))),
    idle: async () => {
      await Promise.all(processors.map((processor) => processor.idle()));
    },
  };
}

interface ReceiverRouteDeps {
  database: Database;
  endpoints: ReadonlyMap<string, Endpoint>;
  metrics: Metrics;
  databaseTimeoutMs: number;
  logger: Logger;
  settings: TrackingSettings['receiver'];
  clock: () => Date;
}

/** The receiver's paths as they may appear in logs and metrics: the `default` account's, and the others'. */
export const REDACTED_WEBHOOK_ROUTE = '/webhooks/:secret';
export const REDACTED_ACCOUNT_WEBHOOK_ROUTE = '/webhooks/:account/:secret';
const WEBHOOKS = '/webhooks/';
const MSGPACK_TYPES = ['application/msgpack', 'application/x-msgpack'];

/** What a delivery's path claims: an account and its secret, or nothing the receiver serves. */
export type WebhookPath = { account: string; secret: string } | null;

/**
 * Reads the account and the secret from the request's raw path, where the secret is one encoded segment
 * (webhookUrl): a decoded path could not tell `/webhooks/a%2Fb` (the `default` account, secret `a/b`) from
 * `/webhooks/a/b` (account `a`, secret `b`). The `default` account has the one-segment path only.
 */
export function readWebhookPath(url: string): WebhookPath {
  const path = url.split('?', 1)[0]!;
  if (!path.startsWith(WEBHOOKS)) return null;
  const segments = path.slice(WEBHOOKS.length).split('/');
  if (segments.some((segment) => segment === '')) return null;
  const [first, second] = segments;
  try {
    if (segments.length === 1) return { account: DEFAULT_ACCOUNT, secret: decodeURIComponent(first!) };
    if (segments.length === 2 && first !== DEFAULT_ACCOUNT)
      return { account: first!, secret: decodeURIComponent(second!) };
  } catch {
    // A malformed escape names no secret of ours.
  }
  return null;
}

type Rejection = { status: 400 | 401 | 413 | 415; error: string; message?: string };
type Reject = (
  request: FastifyRequest,
  reply: FastifyReply,
  kind: string,
  rejection: Rejection,
) => FastifyReply;

/** Registers the route in its own encapsulated scope, so its parsers and error handling stay its own. */
function registerReceiverRoute(app: FastifyInstance, deps: ReceiverRouteDeps): void {
  /** The endpoint each admitted request was for, from its path (set before its body is read). */
  const admitted = new WeakMap<FastifyRequest, Endpoint>();
  /** The route and account of a request's log lines and metrics: never the path, never a name not ours. */
  const labelsOf = (request: FastifyRequest) => {
    const endpoint = admitted.get(request);
    if (endpoint !== undefined) return { route: routeOf(endpoint.account), account: endpoint.account };
    const claimed = readWebhookPath(request.url);
    const account = claimed !== null && deps.endpoints.has(claimed.account) ? claimed.account : '';
    return { route: claimed === null ? `${WEBHOOKS}*` : routeOf(claimed.account), account };
  };
  const reject: Reject = (request, reply, kind, rejection) => {
    const { route, account } = labelsOf(request);
    deps.metrics.webhookEvents.inc({ account, kind, result: 'rejected' });
    deps.logger.warn(
      {
        route,
        ...(account === '' ? {} : { account }),
        status: rejection.status,
        kind,
        reason: rejection.message ?? rejection.error,
      },
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

    scope.setErrorHandler((error: { statusCode?: number; message?: string }, request, reply) => {
      const status = error.statusCode;
      if (status === 413) return reject(request, reply, 'unknown', { status, error: 'payload_too_large' });
      if (status === 415)
        return reject(request, reply, 'unknown', { status, error: 'unsupported_media_type' });
      if (status === 400)
        return reject(request, reply, 'unknown', { status, error: 'bad_request', message: error.message });
      deps.logger.error({ ...labelsOf(request), err: error }, 'webhook receiver failed');
      return reply.code(500).send({ error: 'internal_error' });
    });

    // Before the body is read: a caller without the account's secret learns nothing and costs no parsing.
    // Another account's secret is as wrong as any: each path is checked against its own account's only.
    scope.addHook('onRequest', async (request, reply) => {
      const claimed = readWebhookPath(request.url);
      const endpoint = claimed === null ? undefined : deps.endpoints.get(claimed.account);
      if (claimed === null || endpoint === undefined || !endpoint.isSecret(claimed.secret))
        return reject(request, reply, 'unknown', { status: 401, error: 'unauthorized' });
      admitted.set(request, endpoint);
    });

    // A wildcard, not `:secret`: Fastify refuses a parameter over 100 characters with a 414 whose body
    // quotes the path, and the settings accept a secret of any length from 16.
    scope.post(`${WEBHOOKS}*`, { bodyLimit: deps.settings.bodyLimitBytes }, (request, reply) =>
      receive(deps, admitted.get(request)!, request, reply, reject),
    );
  });
}

function routeOf(account: string): string {
  return account === DEFAULT_ACCOUNT ? REDACTED_WEBHOOK_ROUTE : REDACTED_ACCOUNT_WEBHOOK_ROUTE;
}

async function receive(
  deps: ReceiverRouteDeps,
  endpoint: Endpoint,
  request: FastifyRequest,
  reply: FastifyReply,
  reject: Reject,
) {
  const { account } = endpoint;
  const route = routeOf(account);
  const body = request.body as { event?: unknown; data?: unknown } | undefined;
  const kindLabel = knownKind(body?.event);
  let event: WebhookEvent;
  try {
    event = parseWebhookEvent(body);
  } catch (error) {
    return reject(request, reply, kindLabel, {
      status: 400,
      error: 'bad_event',
      message: (error as Error).message,
    });
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
      deps.database.webhookEvents.store({ ...stored, account, payload: event, receivedAt: deps.clock() }),
    );
  } catch (error) {
    // Not kept, so not acknowledged: the service's retry brings it again.
    deps.metrics.webhookEvents.inc({ account, kind: event.event, result: 'failed' });
    deps.logger.error({ route, account, kind: event.event, err: error }, 'webhook event could not be stored');
    return reply.code(503).send({ error: 'unavailable' });
  }
  deps.metrics.webhookEvents.inc({ account, kind: event.event, result });
  deps.logger.info(
    { route, account, kind: event.event, orderId: stored.serviceOrderId, result },
    'webhook event received',
  );
  if (result === 'stored') endpoint.processor.accept(stored);
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

/**
 * The path the service is told to deliver the account's events to; never logged. The secret is one
 * encoded segment (readWebhookPath relies on it).
 */
export function webhookUrl(publicUrl: string, secret: string, account: string): string {
  const base = `${publicUrl.replace(/\/+$/, '')}${WEBHOOKS}`;
  const encoded = encodeURIComponent(secret);
  return account === DEFAULT_ACCOUNT ? `${base}${encoded}` : `${base}${account}/${encoded}`;
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
