import { pack, unpack } from 'msgpackr';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_TOKEN, type RunningSandbox, startSandbox } from '../../src/sandbox/index.js';
import { call } from './http.js';

let sandbox: RunningSandbox;
beforeAll(async () => {
  sandbox = await startSandbox({
    stepMs: 0,
    tokens: ['full-token-1', 'full-token-2'],
    readTokens: ['read-token-1'],
    adminToken: 'admin-token-1',
    bodyLimit: 1024,
  });
});
afterAll(() => sandbox.close());

async function freshQuoteId(token = 'full-token-1'): Promise<string> {
  return (await call(sandbox.url, 'GET', '/client/quote?symbols=USDTBRL&amount=100', { token })).body.quoteId;
}

describe('sandbox authentication', () => {
  it('answers 401 without a token, with an unknown token or a malformed header, and never echoes it', async () => {
    for (const token of [null, 'nope-not-a-token', DEMO_TOKEN, '']) {
      const answer = await call(sandbox.url, 'GET', '/client/balance', { token });
      expect(answer.status, String(token)).toBe(401);
      expect(answer.body).toMatchObject({ statusCode: 401, error: 'Unauthorized' });
      if (token) expect(answer.bytes.toString()).not.toContain(token);
    }
  });

  it('lets every valid token read, and answers 401 before looking at the body', async () => {
    for (const token of ['full-token-1', 'full-token-2', 'read-token-1', 'admin-token-1']) {
      expect((await call(sandbox.url, 'GET', '/client/balance', { token })).status, token).toBe(200);
    }
    const unauthenticated = await call(sandbox.url, 'POST', '/client/order', { token: null, raw: '{bad' });
    expect(unauthenticated.status).toBe(401);
  });

  it('answers 403 to a read-only token on order creation and webhook config, with nothing changed', async () => {
    const quoteId = await freshQuoteId();
    const order = await call(sandbox.url, 'POST', '/client/order', {
      token: 'read-token-1',
      body: { quoteId },
    });
    expect(order.status).toBe(403);
    expect(order.body).toMatchObject({ statusCode: 403, error: 'Forbidden' });
    const config = await call(sandbox.url, 'POST', '/client/webhook/config', {
      token: 'read-token-1',
      body: { url: 'http://127.0.0.1:9/hook', webhook: { methodId: 'order', active: true } },
    });
    expect(config.status).toBe(403);
    expect(
      (await call(sandbox.url, 'GET', '/client/webhook/config', { token: 'read-token-1' })).body.url,
    ).toBe('');
    // The quote was not consumed by the refused attempt.
    expect(
      (await call(sandbox.url, 'POST', '/client/order', { token: 'full-token-2', body: { quoteId } })).status,
    ).toBe(200);
  });

  it('keeps the control API to the admin token', async () => {
    for (const token of ['full-token-1', 'read-token-1']) {
      expect((await call(sandbox.url, 'GET', '/_sandbox/ledger', { token })).status).toBe(403);
      expect((await call(sandbox.url, 'PUT', '/_sandbox/faults', { token, body: {} })).status).toBe(403);
    }
    expect((await call(sandbox.url, 'GET', '/_sandbox/ledger', { token: null })).status).toBe(401);
    const ledger = await call(sandbox.url, 'GET', '/_sandbox/ledger', { token: 'admin-token-1' });
    expect(ledger.status).toBe(200);
    expect(ledger.body.orders).toEqual(sandbox.ledger());
  });
});

describe('sandbox formats', () => {
  it('speaks msgpack when the request body or Accept asks for it', async () => {
    const quote = await call(sandbox.url, 'GET', '/client/quote?symbols=USDTBRL&amount=100', {
      token: 'full-token-1',
      format: 'msgpack',
    });
    expect(quote.contentType).toMatch(/^application\/msgpack/);
    expect(unpack(quote.bytes)).toMatchObject({ symbol: 'USDTBRL', expiresIn: 5 });
    // msgpack body without an Accept header: answered in msgpack too.
    const order = await call(sandbox.url, 'POST', '/client/order', {
      token: 'full-token-1',
      format: 'msgpack',
      accept: '*/*',
      body: { quoteId: quote.body.quoteId },
    });
    expect(order.status).toBe(200);
    expect(order.contentType).toMatch(/^application\/msgpack/);
    expect(order.body).toMatchObject({ side: 'BUY', price: quote.body.price });
    // JSON body, msgpack answer.
    const error = await call(sandbox.url, 'POST', '/client/order', {
      token: 'full-token-1',
      raw: JSON.stringify({ quoteId: quote.body.quoteId }),
      contentType: 'application/json',
      accept: 'application/msgpack',
    });
    expect(error.status).toBe(400);
    expect(unpack(error.bytes)).toEqual({
      statusCode: 400,
      error: 'Bad Request',
      message: expect.any(String),
    });
  });

  it('answers JSON by default', async () => {
    const answer = await call(sandbox.url, 'GET', '/client/balance', {
      token: 'full-token-1',
      accept: '*/*',
    });
    expect(answer.contentType).toMatch(/^application\/json/);
  });

  it('refuses bad bodies with a clear 4xx and keeps serving', async () => {
    const token = 'full-token-1';
    const cases: [Parameters<typeof call>[3], number][] = [
      [{ raw: 'quoteId=abc', contentType: 'text/plain' }, 415],
      [{ raw: 'quoteId=abc', contentType: 'application/x-www-form-urlencoded' }, 415],
      [{ raw: '{"quoteId":', contentType: 'application/json' }, 400],
      [{ raw: '{"__proto__":{"x":1}}', contentType: 'application/json' }, 400],
      [{ raw: '', contentType: 'application/json' }, 400],
      [{ raw: Buffer.from([0xc1, 0x00]), contentType: 'application/msgpack' }, 400],
      [{ raw: Buffer.from([0x92]), contentType: 'application/msgpack' }, 400],
      [{ raw: pack('just a string'), contentType: 'application/msgpack' }, 400],
      [{ raw: pack([1, 2]), contentType: 'application/msgpack' }, 400],
      [{ raw: JSON.stringify({ quoteId: 'x'.repeat(5000) }), contentType: 'application/json' }, 413],
      [{ raw: pack({ quoteId: 'x'.repeat(5000) }), contentType: 'application/msgpack' }, 413],
    ];
    for (const [options, status] of cases) {
      const answer = await call(sandbox.url, 'POST', '/client/order', { token, ...options });
      expect(answer.status, JSON.stringify(options?.raw).slice(0, 40)).toBe(status);
      expect(answer.body).toMatchObject({
        statusCode: status,
        error: expect.any(String),
        message: expect.any(String),
      });
    }
    expect((await call(sandbox.url, 'GET', '/client/balance', { token })).status).toBe(200);
  });
});
