import { inspect } from 'node:util';
import { pack } from 'msgpackr';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createPurchaseClient, type PurchaseClient } from '../../src/api/index.js';
import { Decimal } from '../../src/money.js';
import { rejectionOf, startHarness } from './support/harness.js';
import { closedPortUrl, type RawServer, resetMidBody, startRawServer } from './support/raw-server.js';

const TOKEN = 'tok-SECRET-5d1e8a9c7b';
const AMOUNT = new Decimal('100');

/** Every rendering of an error that could reach a log line, a terminal or the database. */
function renderings(error: Error): string[] {
  return [
    error.message,
    String(error),
    error.stack ?? '',
    JSON.stringify(error),
    inspect(error, { depth: 10 }),
    inspect({ wrapped: error }, { depth: 10 }),
    JSON.stringify(pino.stdSerializers.errWithCause(error)),
    JSON.stringify(pino.stdSerializers.err(error)),
  ];
}

function expectNoToken(error: Error): void {
  for (const text of renderings(error)) expect(text).not.toContain(TOKEN);
}

/** Stricter: not even a slice of it, as a quoted excerpt of a broken body or a cut-off text would hold. */
function expectNoTokenSlice(error: Error): void {
  const slices = Array.from({ length: TOKEN.length - 5 }, (_, start) => TOKEN.slice(start, start + 6));
  for (const text of renderings(error)) {
    expect(slices.filter((slice) => text.includes(slice))).toEqual([]);
  }
}

/** Bodies that echo the token where a decoder's excerpt or a length cut lands inside it. */
const PADDING = 'x'.repeat(40);
const SLICING_BODIES = {
  'broken JSON': () => ({
    type: 'application/json',
    body: `{"p":"${PADDING}","m":${TOKEN}, "q":"${PADDING}"}`,
  }),
  'msgpack with trailing bytes': () => ({
    type: 'application/msgpack',
    body: Buffer.concat([pack({ message: `${'y'.repeat(70)}${TOKEN}` }), Buffer.from([0xc0])]),
  }),
  'long plain text': () => ({ type: 'text/html', body: `${'z'.repeat(490)}${TOKEN}${'z'.repeat(100)}` }),
};

/** A hostile or buggy service that quotes the Authorization header back in whatever it sends. */
function echoingServer(status: number, shape: 'json' | 'broken-json' | 'field') {
  return startRawServer((request, response) => {
    const auth = request.headers.authorization ?? '';
    response.writeHead(status, { 'content-type': 'application/json' });
    if (shape === 'json')
      response.end(JSON.stringify({ statusCode: status, message: `bad credential ${auth}` }));
    else if (shape === 'broken-json') response.end(`{"message": ${auth}`);
    else
      response.end(
        JSON.stringify({
          symbol: auth,
          price: auth,
          totalCost: '1',
          totalFilled: '1',
          quoteId: 'x',
          expiresIn: 5,
        }),
      );
  });
}

describe('the bearer token never appears in an error', () => {
  let raw: RawServer | undefined;
  let client: PurchaseClient | undefined;
  afterEach(async () => {
    await client?.close();
    await raw?.close();
    [raw, client] = [undefined, undefined];
  });

  it.each([
    [400, 'json'],
    [401, 'json'],
    [403, 'json'],
    [404, 'json'],
    [500, 'json'],
    [400, 'broken-json'],
    [200, 'broken-json'],
    [200, 'field'],
  ] as const)('when the service echoes it (status %i, %s body)', async (status, shape) => {
    raw = await echoingServer(status, shape);
    client = createPurchaseClient({ baseUrl: raw.url, token: TOKEN, retry: { maxAttempts: 1 } });
    expect(raw.requests).toHaveLength(0);
    for (const call of [
      () => client!.getQuote({ symbol: 'USDTBRL', amount: AMOUNT }),
      () => client!.createOrder({ quoteId: 'AbCd1234' }),
    ]) {
      const error = await rejectionOf(call());
      expectNoToken(error);
    }
    // The requests did carry it: the scrubbing above is what kept it out.
    expect(raw.requests[0]?.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it.each(Object.keys(SLICING_BODIES) as (keyof typeof SLICING_BODIES)[])(
    'not even a slice of it when the body is cut or quoted in part (%s)',
    async (kind) => {
      const { type, body } = SLICING_BODIES[kind]();
      raw = await startRawServer((request, response) => {
        response.writeHead(request.method === 'POST' ? 200 : 400, { 'content-type': type }).end(body);
      });
      client = createPurchaseClient({ baseUrl: raw.url, token: TOKEN, retry: { maxAttempts: 1 } });
      expectNoTokenSlice(await rejectionOf(client.getBalance()));
      expectNoTokenSlice(await rejectionOf(client.createOrder({ quoteId: 'AbCd1234' })));
    },
  );

  it('on network failures: reset mid-response, refused connection', async () => {
    raw = await startRawServer((_request, response) => resetMidBody(response));
    client = createPurchaseClient({ baseUrl: raw.url, token: TOKEN, retry: { maxAttempts: 1 } });
    expectNoToken(await rejectionOf(client.getBalance()));
    expectNoToken(await rejectionOf(client.createOrder({ quoteId: 'AbCd1234' })));
    await client.close();
    client = createPurchaseClient({
      baseUrl: await closedPortUrl(),
      token: TOKEN,
      retry: { maxAttempts: 1 },
    });
    expectNoToken(await rejectionOf(client.getBalance()));
  });

  it('on answers of the sandbox with a wrong token', async () => {
    const harness = await startHarness('msgpack', {}, { token: TOKEN });
    try {
      const error = await rejectionOf(harness.client.getOrder('x'));
      expect(error).toMatchObject({ code: 'API_UNAUTHORIZED' });
      expectNoToken(error);
    } finally {
      await harness.close();
    }
  });
});
