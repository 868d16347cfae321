import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/observability/logger.js';
import { type RunningSandbox, type SandboxOptions, startSandbox } from '../../src/sandbox/index.js';
import { call } from './http.js';
import { startReceiver } from './receiver.js';

const cleanups: (() => Promise<void>)[] = [];
async function start(options: SandboxOptions = {}): Promise<RunningSandbox> {
  const sandbox = await startSandbox({ stepMs: 0, webhookRetryDelaysMs: [10, 20, 40], ...options });
  cleanups.push(() => sandbox.close());
  return sandbox;
}
async function receiver(statuses: number[] = []) {
  const r = await startReceiver(statuses);
  cleanups.push(r.close);
  return r;
}
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function configure(sandbox: RunningSandbox, url: string, methodId: string, active = true) {
  return call(sandbox.url, 'POST', '/client/webhook/config', {
    body: { url, webhook: { methodId, active } },
  });
}

async function placeOrder(sandbox: RunningSandbox) {
  const quote = (await call(sandbox.url, 'GET', '/client/quote?symbols=USDTBRL&amount=500')).body;
  return (await call(sandbox.url, 'POST', '/client/order', { body: { quoteId: quote.quoteId } })).body;
}

describe('sandbox webhook config', () => {
  it('sets the url and switches one event kind per POST; GET answers the same shape', async () => {
    const sandbox = await start();
    const initial = await call(sandbox.url, 'GET', '/client/webhook/config');
    expect(initial.body.url).toBe('');
    expect(initial.body.events).toHaveLength(6);
    expect(initial.body.events.every((e: { active: boolean }) => !e.active)).toBe(true);
    await configure(sandbox, 'http://127.0.0.1:1/a', 'order');
    const answer = await configure(sandbox, 'http://127.0.0.1:1/b', 'deposit_fiat');
    expect(answer.status).toBe(200);
    expect(answer.body.url).toBe('http://127.0.0.1:1/b');
    const active = answer.body.events
      .filter((e: { active: boolean }) => e.active)
      .map((e: { methodId: string }) => e.methodId);
    expect(active).toEqual(['order', 'deposit_fiat']);
    expect((await call(sandbox.url, 'GET', '/client/webhook/config')).body).toEqual(answer.body);
    const off = await configure(sandbox, 'http://127.0.0.1:1/b', 'order', false);
    expect(off.body.events.find((e: { methodId: string }) => e.methodId === 'order').active).toBe(false);
  });

  it('answers 400 for a bad config body', async () => {
    const sandbox = await start();
    for (const body of [
      { url: 'not a url', webhook: { methodId: 'order', active: true } },
      { url: 'ftp://127.0.0.1/x', webhook: { methodId: 'order', active: true } },
      { url: 'http://127.0.0.1/x', webhook: { methodId: 'bogus', active: true } },
      { url: 'http://127.0.0.1/x', webhook: { methodId: 'order', active: 'yes' } },
      { url: 'http://127.0.0.1/x' },
    ]) {
      expect(
        (await call(sandbox.url, 'POST', '/client/webhook/config', { body })).status,
        JSON.stringify(body),
      ).toBe(400);
    }
  });
});

describe('sandbox webhook delivery', () => {
  it('posts every lifecycle event of an order as {event, data} in JSON', async () => {
    const sandbox = await start();
    const hook = await receiver();
    for (const kind of ['order', 'deposit_fiat', 'withdrawal_crypto'])
      await configure(sandbox, hook.url, kind);
    const order = await placeOrder(sandbox);
    await hook.waitFor(1);
    for (let i = 0; i < 4; i++) await sandbox.step(order.id);
    await hook.waitFor(5);
    // Deliveries run concurrently, so compare as a set of (event, status) rather than in order.
    const events = hook.received.map((r) => `${r.body.event}:${String(r.body.data.status ?? '')}`).sort();
    expect(events).toEqual([
      'deposit_fiat:',
      'deposit_fiat:',
      'order:',
      'withdrawal_crypto:confirmed',
      'withdrawal_crypto:sent',
    ]);
    expect(hook.received[0]!.contentType).toMatch(/^application\/json/);
    expect(hook.received[0]!.body).toEqual({ event: 'order', data: order });
    const deposits = hook.received.filter((r) => r.body.event === 'deposit_fiat');
    expect(deposits[0]!.body.data).toMatchObject({
      orderId: order.id,
      currency: 'BRL',
      receivedAt: expect.any(String),
    });
  });

  it('delivers in msgpack when configured so, and the quote event on quotes', async () => {
    const sandbox = await start({ webhookFormat: 'msgpack' });
    const hook = await receiver();
    await configure(sandbox, hook.url, 'quote');
    const quote = (await call(sandbox.url, 'GET', '/client/quote?symbols=USDTBRL&amount=500')).body;
    await hook.waitFor(1);
    expect(hook.received[0]!.contentType).toBe('application/msgpack');
    expect(hook.received[0]!.body).toEqual({ event: 'quote', data: quote });
  });

  it('retries a failing delivery with backoff and logs every attempt', async () => {
    const sandbox = await start();
    const hook = await receiver([500, 503]);
    await configure(sandbox, hook.url, 'order');
    const order = await placeOrder(sandbox);
    await hook.waitFor(3);
    await expect
      .poll(async () => (await call(sandbox.url, 'GET', '/client/webhook/order/logs')).body.data.length)
      .toBe(3);
    const logs = (await call(sandbox.url, 'GET', '/client/webhook/order/logs')).body;
    expect(logs.pagination).toEqual({ page: 1, limit: 20, total: 3, totalPages: 1 });
    expect(
      logs.data.map((e: { attempt: number; statusCode: number; success: boolean }) => [
        e.attempt,
        e.statusCode,
        e.success,
      ]),
    ).toEqual([
      [3, 200, true],
      [2, 503, false],
      [1, 500, false],
    ]);
    expect(logs.data[0]).toMatchObject({
      methodId: 'order',
      url: hook.url,
      payload: { event: 'order', data: order },
    });
    expect(logs.data[0].createdAt).toMatch(/Z$/);
  });

  it('gives up after the configured retries and logs network errors with a null status', async () => {
    const sandbox = await start({ webhookRetryDelaysMs: [5, 5] });
    const hook = await receiver();
    await hook.close();
    await configure(sandbox, hook.url, 'order');
    await placeOrder(sandbox);
    await expect
      .poll(async () => (await call(sandbox.url, 'GET', '/client/webhook/logs')).body.pagination.total)
      .toBe(3);
    const logs = (await call(sandbox.url, 'GET', '/client/webhook/logs')).body.data;
    expect(logs.map((e: { attempt: number; statusCode: null }) => [e.attempt, e.statusCode])).toEqual([
      [3, null],
      [2, null],
      [1, null],
    ]);
  });

  it('logs every attempt to its logger without the receiver path, where receivers keep their secret', async () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const logger = createLogger({ level: 'info', pretty: false, destination });
    const sandbox = await start({ logger, webhookRetryDelaysMs: [5] });
    const hook = await receiver([500]);
    const secretUrl = hook.url.replace('/hook', '/webhooks/very-secret-path-123');
    await configure(sandbox, secretUrl, 'order');
    await placeOrder(sandbox);
    await hook.waitFor(2);
    await expect.poll(() => lines.filter((line) => line.includes('sandbox webhook attempt')).length).toBe(2);
    expect(lines.join('')).not.toContain('very-secret-path-123');
    expect(JSON.parse(lines.find((line) => line.includes('"attempt":1'))!)).toMatchObject({
      statusCode: 500,
      success: false,
    });
  });
});

describe('sandbox webhook logs paging', () => {
  it('applies page/limit bounds on /:id/logs and page/pageSize defaults on /logs', async () => {
    const sandbox = await start();
    const hook = await receiver();
    await configure(sandbox, hook.url, 'quote');
    for (let i = 0; i < 25; i++) await call(sandbox.url, 'GET', '/client/quote?symbols=USDTBRL&amount=500');
    await hook.waitFor(25);
    await expect
      .poll(async () => (await call(sandbox.url, 'GET', '/client/webhook/logs')).body.pagination.total)
      .toBe(25);

    const byId = async (query: string) => call(sandbox.url, 'GET', `/client/webhook/quote/logs${query}`);
    expect((await byId('')).body.pagination).toEqual({ page: 1, limit: 20, total: 25, totalPages: 2 });
    expect((await byId('?page=2&limit=10')).body.data).toHaveLength(10);
    expect((await byId('?page=3&limit=10')).body.data).toHaveLength(5);
    expect((await byId('?limit=100')).body.data).toHaveLength(25);
    const beyond = (await byId('?page=9&limit=10')).body;
    expect(beyond).toEqual({ data: [], pagination: { page: 9, limit: 10, total: 25, totalPages: 3 } });
    for (const bad of ['?page=0', '?limit=0', '?limit=101', '?page=x'])
      expect((await byId(bad)).status, bad).toBe(400);
    expect((await call(sandbox.url, 'GET', '/client/webhook/order/logs')).body.pagination.total).toBe(0);
    expect((await call(sandbox.url, 'GET', '/client/webhook/bogus/logs')).status).toBe(404);

    const all = async (query: string) =>
      (await call(sandbox.url, 'GET', `/client/webhook/logs${query}`)).body;
    expect((await all('')).pagination).toEqual({ page: 1, limit: 20, total: 25, totalPages: 2 });
    expect((await all('?page=2&pageSize=5')).pagination).toEqual({
      page: 2,
      limit: 5,
      total: 25,
      totalPages: 5,
    });
    expect((await all('?pageSize=1000')).pagination.limit).toBe(100);
    expect((await all('?page=0')).pagination.page).toBe(1);
    expect((await all('?page=-3&pageSize=0')).pagination).toMatchObject({ page: 1, limit: 1 });
    expect((await all('?page=99999999999&pageSize=99999999999')).pagination).toMatchObject({
      page: 1_000_000,
      limit: 100,
    });
    expect((await byId('?page=99999999999')).status).toBe(400);
    expect((await call(sandbox.url, 'GET', '/client/webhook/logs?pageSize=abc')).status).toBe(400);
  });
});
