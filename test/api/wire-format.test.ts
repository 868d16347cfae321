/**
 * What the client puts on the wire and how it reads what comes back, seen from a bare server: the
 * sandbox answers whatever the client asks for, so tests against it alone cannot tell a client that
 * ignores TREASURY_API_FORMAT from one that honours it.
 */

import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { pack, unpack } from 'msgpackr';
import { afterEach, describe, expect, it } from 'vitest';
import { createPurchaseClient, type PurchaseClient, type WireFormat } from '../../src/api/index.js';
import { toDecimalText } from '../../src/money.js';
import { FORMATS, rejectionOf } from './support/harness.js';
import { MEDIA_TYPE, type RawServer, startRawServer } from './support/raw-server.js';

/** Read here, not from the code under test: the User-Agent must carry the package's version. */
const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

const ORDER = {
  id: 'o-1',
  amount: 2500.5,
  symbol: 'USDTBRL',
  price: '5.4321',
  side: 'BUY',
  timestamp: '2030-01-02T03:04:05.000Z',
  addedByANewerService: { nested: true },
};

function answer(response: ServerResponse, format: WireFormat, body: unknown): void {
  const bytes = format === 'json' ? Buffer.from(JSON.stringify(body)) : pack(body);
  response.writeHead(200, { 'content-type': MEDIA_TYPE[format] }).end(bytes);
}

function decode(format: WireFormat, bytes: Buffer): unknown {
  return format === 'json' ? JSON.parse(bytes.toString('utf8')) : unpack(bytes);
}

let raw: RawServer | undefined;
let client: PurchaseClient | undefined;
afterEach(async () => {
  await client?.close();
  await raw?.close();
  [raw, client] = [undefined, undefined];
});

describe.each(FORMATS)('the %s wire format', (format) => {
  it('is what the client asks for, sends and reads; extra answer fields are tolerated', async () => {
    raw = await startRawServer((request, response) => {
      if (request.url === '/client/order') answer(response, format, ORDER);
      else answer(response, format, { url: 'http://127.0.0.1:9/hook', events: [], extra: 1 });
    });
    client = createPurchaseClient({ baseUrl: raw.url, token: 'format-token', format });

    const order = await client.createOrder({ quoteId: 'AbCd1234', fxRate: '5.4321' });
    expect(toDecimalText(order.amount)).toBe('2500.5');
    expect(order).not.toHaveProperty('addedByANewerService');
    await client.setWebhookConfig({ url: 'http://127.0.0.1:9/hook', methodId: 'order', active: true });
    await client.getWebhookConfig();

    const [create, configure, read] = raw.requests;
    for (const request of [create, configure, read]) expect(request?.accept).toBe(MEDIA_TYPE[format]);
    // The client names itself on every request, with the package's version.
    for (const request of [create, configure, read])
      expect(request?.userAgent).toBe(`treasury-bot/${version}`);
    expect(create?.contentType).toBe(MEDIA_TYPE[format]);
    expect(decode(format, create!.body)).toEqual({ quoteId: 'AbCd1234', fxRate: '5.4321' });
    expect(configure?.contentType).toBe(MEDIA_TYPE[format]);
    expect(decode(format, configure!.body)).toEqual({
      url: 'http://127.0.0.1:9/hook',
      webhook: { methodId: 'order', active: true },
    });
    expect(read).toMatchObject({ method: 'GET', contentType: undefined });
    expect(read?.body).toHaveLength(0);
  });
});

describe('JSON numbers a double cannot hold', () => {
  const TRACKING = {
    orderId: 'o-1',
    settlementStatus: 'settled',
    expectedAmount: '@expected',
    receivedAmount: 0,
    withdrawnAmount: '@withdrawn',
    withdrawal: null,
  };

  it('reach the amount fields exactly, as the service wrote them', async () => {
    const text = JSON.stringify(TRACKING)
      .replace('"@expected"', '1234567890123.456789')
      .replace('"@withdrawn"', '9007199254740993');
    raw = await startRawServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(text);
    });
    client = createPurchaseClient({ baseUrl: raw.url, token: 'format-token' });
    const tracking = await client.getTracking('o-1');
    expect(toDecimalText(tracking.expectedAmount)).toBe('1234567890123.456789');
    expect(toDecimalText(tracking.withdrawnAmount)).toBe('9007199254740993');
  });

  it('are refused, naming the field, where the field is not an amount', async () => {
    const page = '{"data":[],"pagination":{"page":1,"limit":20,"total":12345678901234567890,"totalPages":1}}';
    raw = await startRawServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(page);
    });
    client = createPurchaseClient({ baseUrl: raw.url, token: 'format-token', retry: { maxAttempts: 1 } });
    const error = await rejectionOf(client.listOrders());
    expect(error).toMatchObject({ code: 'API_BAD_RESPONSE', field: 'pagination.total' });
  });
});
