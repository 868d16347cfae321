import { pack } from 'msgpackr';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTracker, createWebhookReceiver, type WebhookReceiver } from '../../src/tracking/index.js';
import { createTestDatabase } from '../support/database.js';
import {
  type Bench,
  logged,
  type ReceiverListener,
  SECRET,
  startBench,
  startHttp,
  startReceiver,
  storedPayloads,
} from './support/harness.js';

describe('webhook receiver', () => {
  let bench: Bench;
  let receiver: WebhookReceiver;
  let listener: ReceiverListener;
  const answers: string[] = [];

  const post = async (body: string | Buffer, contentType: string, secret = SECRET) => {
    const response = await request(`${listener.url}/webhooks/${encodeURIComponent(secret)}`, {
      method: 'POST',
      headers: { 'content-type': contentType },
      body,
    });
    const text = await response.body.text();
    answers.push(text);
    return { status: response.statusCode, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
  };
  const postJson = (value: unknown, secret?: string) =>
    post(JSON.stringify(value), 'application/json', secret);
  const deposit = (orderId: string, amount = 500.5) => ({
    event: 'deposit_fiat',
    data: { orderId, amount, currency: 'BRL', receivedAt: '2026-03-02T12:00:00.000Z' },
  });
  const counted = async (kind: string, result: string) =>
    (await bench.metrics.webhookEvents.get()).values.find(
      (value) => value.labels.kind === kind && value.labels.result === result,
    )?.value ?? 0;

  beforeAll(async () => {
    bench = await startBench();
    listener = await startReceiver(bench);
    receiver = listener.receiver;
  });
  afterAll(async () => {
    await listener.close();
    await bench.close();
  });

  it('stores an event once: a redelivery, in JSON or msgpack, is a duplicate', async () => {
    const event = deposit('unknown-order-1');
    expect(await postJson(event)).toEqual({ status: 200, body: { result: 'stored' } });
    expect(await postJson(event)).toEqual({ status: 200, body: { result: 'duplicate' } });
    // Same content, keys in another order, other format: still the same event.
    const reordered = {
      data: {
        receivedAt: event.data.receivedAt,
        currency: 'BRL',
        amount: 500.5,
        orderId: event.data.orderId,
      },
      event: event.event,
    };
    expect(await post(pack(reordered), 'application/msgpack')).toEqual({
      status: 200,
      body: { result: 'duplicate' },
    });
    // A different amount is a different event.
    expect(await post(pack(deposit('unknown-order-1', 250)), 'application/msgpack')).toMatchObject({
      body: { result: 'stored' },
    });
    expect(await counted('deposit_fiat', 'stored')).toBe(2);
    expect(await counted('deposit_fiat', 'duplicate')).toBe(2);
  });

  it('stores a JSON amount of 20 significant digits exactly, as decimal text', async () => {
    const exact = '12345678901234.567891';
    const body = `{"event":"deposit_fiat","data":{"orderId":"o-exact","amount":${exact},"currency":"BRL","receivedAt":"2026-03-02T12:00:00.000Z"}}`;
    expect(await post(body, 'application/json')).toEqual({ status: 200, body: { result: 'stored' } });
    await receiver.idle();
    const [stored] = await storedPayloads(bench.database, 'o-exact');
    // JSON.parse would have kept 12345678901234.568.
    expect((stored as { data: { amount: unknown } }).data.amount).toBe(exact);
  });

  it('keeps events for unknown orders and processes them once the order is recorded', async () => {
    const { serviceOrderId, order: ours } = await bench.placeOrder({ record: false });
    expect(ours).toBeNull();
    await postJson(deposit(serviceOrderId));
    await receiver.idle();
    const kept = await bench.database.webhookEvents.listToRetry(bench.account, new Date(0));
    expect(kept.filter((event) => event.serviceOrderId === serviceOrderId)).toEqual([
      expect.objectContaining({ status: 'unknown_order', kind: 'deposit_fiat' }),
    ]);

    const recorded = await bench.database.orders.recordExternal({
      ...(await bench.client.getOrder(serviceOrderId)),
      account: bench.account,
    });
    await receiver.sweep();
    const after = await bench.database.webhookEvents.listToRetry(bench.account, new Date(0));
    expect(after.some((event) => event.serviceOrderId === serviceOrderId)).toBe(false);
    const history = await bench.database.orders.history(recorded.id);
    expect(history.map((event) => event.source)).toEqual(['create', 'webhook']);
  });

  it('answers 401 without detail for a wrong secret, before reading the body', async () => {
    for (const wrong of [`${SECRET}x`, SECRET.slice(0, -1), 'a', SECRET.toUpperCase()]) {
      expect(await postJson(deposit('o-1'), wrong)).toEqual({ status: 401, body: { error: 'unauthorized' } });
    }
    const big = await post(Buffer.alloc(10 * 1024 * 1024, 0x20), 'application/json', 'wrong-secret-wrong');
    expect(big.status).toBe(401);
  });

  it('answers 400 for garbage msgpack, malformed JSON, a wrong shape and an unknown kind', async () => {
    const garbage = await post(Buffer.from([0xc1, 0xff, 0x00, 0x13]), 'application/msgpack');
    expect(garbage).toMatchObject({ status: 400, body: { error: 'bad_request' } });
    expect(await post(pack(42), 'application/msgpack')).toMatchObject({
      status: 400,
      body: { error: 'bad_event' },
    });
    expect(await post('{"event": "order", "data": ', 'application/json')).toMatchObject({ status: 400 });
    expect(await post('', 'application/json')).toMatchObject({ status: 400 });
    // Fastify's guard against prototype poisoning stays in front of the exact-number parsing.
    expect(await post('{"event":"order","__proto__":{"x":1}}', 'application/json')).toMatchObject({
      status: 400,
      body: { error: 'bad_request' },
    });
    const noOrder = await postJson({ event: 'deposit_fiat', data: { amount: 1, currency: 'BRL' } });
    expect(noOrder).toMatchObject({ status: 400, body: { error: 'bad_event' } });
    expect(String(noOrder.body.message)).toContain('data.orderId');
    const unknownKind = await postJson({ event: 'refund', data: { orderId: 'o-1' } });
    expect(unknownKind).toMatchObject({ status: 400, body: { error: 'bad_event' } });
    expect(String(unknownKind.body.message)).toContain('event');
    expect(await counted('unknown', 'rejected')).toBeGreaterThanOrEqual(5);
    expect(await counted('deposit_fiat', 'rejected')).toBe(1);
  });

  it('answers 413 for a 10 MB body and 415 for a content type it does not speak', async () => {
    const big = await post(Buffer.alloc(10 * 1024 * 1024, 0x20), 'application/json');
    expect(big).toEqual({ status: 413, body: { error: 'payload_too_large' } });
    const bigMsgpack = await post(Buffer.alloc(300 * 1024, 0xc0), 'application/msgpack');
    expect(bigMsgpack.status).toBe(413);
    expect(await post(JSON.stringify(deposit('o-1')), 'text/plain')).toEqual({
      status: 415,
      body: { error: 'unsupported_media_type' },
    });
    expect(await post('event=order', 'application/x-www-form-urlencoded')).toMatchObject({ status: 415 });
  });

  it('never lets the secret out: not in logs, metrics or answers', async () => {
    const metrics = await bench.metrics.registry.metrics();
    const everything = [...bench.lines, metrics, ...answers].join('\n');
    expect(bench.lines.length).toBeGreaterThan(10);
    expect(everything).not.toContain(SECRET);
    expect(everything).not.toContain(encodeURIComponent(SECRET));
    const routes = logged(bench.lines).filter((line) => 'route' in line);
    expect(routes.length).toBeGreaterThan(10);
    expect(new Set(routes.map((line) => line.route))).toEqual(new Set(['/webhooks/:secret']));
  });

  it('takes a secret longer than a route parameter may be, and refuses a wrong one without echoing it', async () => {
    const long = `${'k7/Q+'.repeat(30)}end`;
    const settings = bench.settings({ poll: { enabled: false } });
    const tracker = createTracker({ ...bench, settings });
    const longReceiver = createWebhookReceiver({
      ...bench,
      accounts: [{ name: bench.account, secret: long, tracker }],
      settings,
    });
    const server = await startHttp((app) => longReceiver.register(app));
    try {
      const deliver = (secret: string) =>
        request(`${server.url}/webhooks/${encodeURIComponent(secret)}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(deposit('o-long-secret')),
        });
      const accepted = await deliver(long);
      expect(accepted.statusCode).toBe(200);
      expect(await accepted.body.json()).toEqual({ result: 'stored' });
      const refused = await deliver(`${long}x`);
      expect(refused.statusCode).toBe(401);
      expect(await refused.body.text()).toBe('{"error":"unauthorized"}');
    } finally {
      await server.app.close();
      await longReceiver.stop();
    }
  });

  it('answers 503 (so the service retries) when the event cannot be stored', async () => {
    const broken = await createTestDatabase();
    await broken.drop();
    const settings = bench.settings();
    const tracker = createTracker({ ...bench, database: broken.database, settings });
    const orphan = createWebhookReceiver({
      ...bench,
      database: broken.database,
      accounts: [{ name: bench.account, secret: SECRET, tracker }],
      settings,
    });
    const server = await startHttp((app) => orphan.register(app));
    try {
      const response = await request(`${server.url}/webhooks/${SECRET}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(deposit('o-503')),
      });
      expect(response.statusCode).toBe(503);
      expect(await response.body.json()).toEqual({ error: 'unavailable' });
      expect(await counted('deposit_fiat', 'failed')).toBe(1);
    } finally {
      await server.app.close();
    }
  });
});
