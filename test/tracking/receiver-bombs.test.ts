/**
 * Hostile webhook bodies (issue 34 item 2): a 393-byte msgpack body once froze the worker for seconds,
 * and its stored copy was swept again every 10 s for an hour. Each bomb is now refused before it is
 * walked; what is stored (and swept) is the validated event, and a stored event is retried for a bounded
 * time only. The per-test timeouts are far above a refusal and far below what the bombs cost before.
 */
import { pack } from 'msgpackr';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebhookReceiver } from '../../src/tracking/index.js';
import {
  deeplyNestedJson,
  deeplyNestedMsgpack,
  LONG_JSON_NUMBER,
  msgpackReferenceBomb,
} from '../support/body-bombs.js';
import {
  type Bench,
  type ReceiverListener,
  SECRET,
  startBench,
  startReceiver,
  storedPayloads,
} from './support/harness.js';

const BOMB_TIMEOUT_MS = 3_000;
const RETRY_WINDOW_MS = 60_000;

describe('webhook receiver against hostile bodies', () => {
  let bench: Bench;
  let receiver: WebhookReceiver;
  let listener: ReceiverListener;

  const post = async (body: string | Buffer, contentType: string) => {
    const response = await request(`${listener.url}/webhooks/${encodeURIComponent(SECRET)}`, {
      method: 'POST',
      headers: { 'content-type': contentType },
      body,
    });
    const text = await response.body.text();
    return { status: response.statusCode, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
  };
  const deposit = (orderId: string) => ({
    event: 'deposit_fiat',
    data: { orderId, amount: 500.5, currency: 'BRL', receivedAt: '2026-03-02T12:00:00.000Z' },
  });
  const inData = (orderId: string) => (hostile: unknown) => {
    const event = deposit(orderId);
    return { ...event, data: { ...event.data, hostile } };
  };
  const storedFor = async (orderId: string) =>
    (await bench.database.webhookEvents.listToRetry(bench.account, new Date(0))).filter(
      (event) => event.serviceOrderId === orderId,
    );

  beforeAll(async () => {
    bench = await startBench();
    listener = await startReceiver(bench, {
      receiver: { unknownOrderRetryMs: RETRY_WINDOW_MS, bodyLimitBytes: 256 * 1024 },
    });
    receiver = listener.receiver;
  });
  afterAll(async () => {
    await listener.close();
    await bench.close();
  });

  it(
    'refuses msgpack structured-clone references (20 doubled levels) before expanding them',
    async () => {
      const bomb = msgpackReferenceBomb(inData('o-reference-bomb'));
      expect(bomb.length).toBeLessThan(1024);
      const answer = await post(bomb, 'application/msgpack');
      expect(answer).toMatchObject({ status: 400, body: { error: 'bad_request' } });
      expect(String(answer.body.message)).toMatch(/msgpack extension type 0x69 is not accepted/);
      expect(await storedFor('o-reference-bomb')).toEqual([]);
    },
    BOMB_TIMEOUT_MS,
  );

  it.each([
    ['application/json', deeplyNestedJson(inData('o-deep-json'))],
    ['application/msgpack', deeplyNestedMsgpack(inData('o-deep-msgpack'))],
  ] as const)(
    'refuses a %s body nested 50,000 deep',
    async (contentType, body) => {
      const answer = await post(body, contentType);
      expect(answer).toMatchObject({ status: 400, body: { error: 'bad_request' } });
      expect(String(answer.body.message)).toMatch(/nested deeper than 32 levels/);
    },
    BOMB_TIMEOUT_MS,
  );

  it(
    'refuses a JSON number of 80,000 digits, naming the limit',
    async () => {
      const body = JSON.stringify(deposit('o-long-number')).replace('500.5', LONG_JSON_NUMBER);
      const answer = await post(body, 'application/json');
      expect(answer).toMatchObject({ status: 400, body: { error: 'bad_request' } });
      expect(String(answer.body.message)).toMatch(/number of more than 40 digits/);
      expect(await storedFor('o-long-number')).toEqual([]);
    },
    BOMB_TIMEOUT_MS,
  );

  it(
    'refuses a body over the limit with 413, in either format',
    async () => {
      const padding = 'x'.repeat(300 * 1024);
      const json = await post(JSON.stringify({ ...deposit('o-big'), padding }), 'application/json');
      expect(json).toEqual({ status: 413, body: { error: 'payload_too_large' } });
      const msgpack = await post(pack({ ...deposit('o-big'), padding }), 'application/msgpack');
      expect(msgpack).toEqual({ status: 413, body: { error: 'payload_too_large' } });
    },
    BOMB_TIMEOUT_MS,
  );

  it('stores the validated event only: fields it does not know are not kept', async () => {
    const event = deposit('o-extra-fields');
    const body = { ...event, data: { ...event.data, note: 'ignored', nested: { a: [1, 2] } }, extra: true };
    expect(await post(pack(body), 'application/msgpack')).toEqual({
      status: 200,
      body: { result: 'stored' },
    });
    await receiver.idle();
    const [stored] = await storedFor('o-extra-fields');
    // The sweep reads what it acts on, never the payload.
    expect(stored).toMatchObject({ kind: 'deposit_fiat', status: 'unknown_order' });
    expect(stored).not.toHaveProperty('payload');
    expect(await storedPayloads(bench.database, 'o-extra-fields')).toEqual([
      {
        event: 'deposit_fiat',
        data: {
          orderId: 'o-extra-fields',
          amount: '500.5',
          currency: 'BRL',
          receivedAt: '2026-03-02T12:00:00.000Z',
        },
      },
    ]);
    // The same event with other unknown fields is the same event.
    expect(await post(JSON.stringify(event), 'application/json')).toEqual({
      status: 200,
      body: { result: 'duplicate' },
    });
  });

  it('retries a stored event that cannot be processed for the retry window only, not forever', async () => {
    const { serviceOrderId } = await bench.placeOrder();
    // Every tracking answer for this order is now unreadable: each check of it fails.
    bench.sandbox.setFaults({ tracking: { malformedRate: 1, malformed: 'other-order-id' } });
    try {
      expect(await post(JSON.stringify(deposit(serviceOrderId)), 'application/json')).toMatchObject({
        status: 200,
      });
      await receiver.idle();
      expect(await storedFor(serviceOrderId)).toEqual([expect.objectContaining({ status: 'pending' })]);
      const before = bench.requests.length;
      expect(await receiver.sweep()).toBeGreaterThanOrEqual(1);
      expect(bench.requests.length).toBeGreaterThan(before);

      bench.clock.advance(RETRY_WINDOW_MS + 1);
      const after = bench.requests.length;
      expect(await receiver.sweep()).toBe(0);
      expect(bench.requests.length).toBe(after);
    } finally {
      bench.sandbox.setFaults({});
    }
  });
});
