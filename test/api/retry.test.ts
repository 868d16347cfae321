import { afterEach, describe, expect, it } from 'vitest';
import { createPurchaseClient, type PurchaseClient, RETRIED_ERROR_CODES } from '../../src/api/index.js';
import { shouldRetry } from '../../src/api/retry-policy.js';
import { Decimal } from '../../src/money.js';
import { type Harness, rejectionOf, startHarness } from './support/harness.js';
import { type RawServer, startRawServer } from './support/raw-server.js';

const BALANCE = {
  fiat: { currency: 'BRL', balance: '10.00' },
  crypto: { currency: 'USDT', balance: '1.000000' },
  credit: { total: '100.00', used: '0.00', available: '100.00' },
  canWithdraw: true,
};

describe('retry of safe requests', () => {
  let harness: Harness | undefined;
  let raw: RawServer | undefined;
  let client: PurchaseClient | undefined;
  afterEach(async () => {
    await client?.close();
    await harness?.close();
    await raw?.close();
    [harness, raw, client] = [undefined, undefined, undefined];
  });

  it('retries a failing GET a bounded, configurable number of times, waiting the backoff in between', async () => {
    const waits: number[] = [];
    harness = await startHarness(
      'json',
      { faults: { balance: { errorRate: 1 } } },
      {
        retry: { maxAttempts: 5, baseDelayMs: 100, maxDelayMs: 250 },
        random: () => 1,
        sleep: async (ms) => {
          waits.push(ms);
        },
      },
    );
    const error = await rejectionOf(harness.client.getBalance());
    expect(error).toMatchObject({ code: 'API_SERVER_ERROR' });
    expect(harness.events.map((event) => [event.attempt, event.status, event.errorCode])).toEqual([
      [1, 500, 'API_SERVER_ERROR'],
      [2, 500, 'API_SERVER_ERROR'],
      [3, 500, 'API_SERVER_ERROR'],
      [4, 500, 'API_SERVER_ERROR'],
      [5, 500, 'API_SERVER_ERROR'],
    ]);
    expect(waits).toEqual([100, 200, 250, 250]);
  });

  it('a GET that fails twice and then answers succeeds', async () => {
    raw = await startRawServer((_request, response, index) => {
      if (index <= 2) {
        response.writeHead(503).end();
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(BALANCE));
    });
    client = createPurchaseClient({ baseUrl: raw.url, token: 'retry-token-1', retry: { baseDelayMs: 1 } });
    const balance = await client.getBalance();
    expect(balance.fiat.balance.eq('10')).toBe(true);
    expect(raw.requests).toHaveLength(3);
  });

  it('never retries POST /client/order, whatever the failure', async () => {
    raw = await startRawServer((request, response, index) => {
      if (index % 2 === 1) response.writeHead(500).end();
      else request.socket.destroy();
    });
    client = createPurchaseClient({
      baseUrl: raw.url,
      token: 'retry-token-1',
      retry: { maxAttempts: 5, baseDelayMs: 1 },
    });
    expect(await rejectionOf(client.createOrder({ quoteId: 'AbCd1234' }))).toMatchObject({
      code: 'OUTCOME_UNKNOWN',
    });
    expect(raw.requests).toHaveLength(1);
    expect(await rejectionOf(client.createOrder({ quoteId: 'AbCd1234' }))).toMatchObject({
      code: 'OUTCOME_UNKNOWN',
    });
    expect(raw.requests).toHaveLength(2);
  });

  it('does not retry the webhook config POST, nor answers that will not change (4xx)', async () => {
    harness = await startHarness('json', { faults: { setWebhookConfig: { errorRate: 1 } } });
    const config = await rejectionOf(
      harness.client.setWebhookConfig({ url: 'http://127.0.0.1:9/hook', methodId: 'order', active: true }),
    );
    expect(config).toMatchObject({ code: 'API_SERVER_ERROR' });
    expect(harness.events).toHaveLength(1);
    await rejectionOf(harness.client.getOrder('missing'));
    await rejectionOf(harness.client.getQuote({ symbol: 'USDTBRL', amount: new Decimal('0.0000001') }));
    expect(harness.events.map((event) => event.operation)).toEqual([
      'setWebhookConfig',
      'getOrder',
      'getQuote',
    ]);
  });
});

describe('retry policy', () => {
  it('retries only transient failures', () => {
    const retried = Object.entries(RETRIED_ERROR_CODES)
      .filter(([, retry]) => retry)
      .map(([code]) => code);
    expect(retried.sort()).toEqual(['API_RATE_LIMITED', 'API_SERVER_ERROR', 'API_UNAVAILABLE']);
    expect(shouldRetry('API_UNAVAILABLE', 2, { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 1 })).toBe(true);
    expect(shouldRetry('API_UNAVAILABLE', 3, { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 1 })).toBe(false);
  });
});
