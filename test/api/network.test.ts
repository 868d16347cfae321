import { afterEach, describe, expect, it } from 'vitest';
import {
  ApiUnavailableError,
  createPurchaseClient,
  OutcomeUnknownError,
  type PurchaseClient,
  type RequestEvent,
} from '../../src/api/index.js';
import { Decimal } from '../../src/money.js';
import { type Harness, rejectionOf, startHarness } from './support/harness.js';
import {
  closedPortUrl,
  type RawServer,
  resetMidBody,
  stallMidBody,
  startRawServer,
} from './support/raw-server.js';

const AMOUNT = new Decimal('100');
const QUOTE_ID = 'AbCd1234';

/** undici checks header and body timeouts on a coarse (about 1 s) clock, so tests avoid repeating them. */
function clientFor(url: string, events: RequestEvent[], maxAttempts = 3): PurchaseClient {
  return createPurchaseClient({
    baseUrl: url,
    token: 'network-test-token',
    timeouts: { connectMs: 500, headersMs: 300, bodyMs: 150 },
    retry: { maxAttempts, baseDelayMs: 1, maxDelayMs: 2 },
    onRequest: (event) => events.push(event),
  });
}

describe('network failures', () => {
  let harness: Harness | undefined;
  let raw: RawServer | undefined;
  let client: PurchaseClient | undefined;
  afterEach(async () => {
    await client?.close();
    await harness?.close();
    await raw?.close();
    harness = undefined;
    raw = undefined;
    client = undefined;
  });

  it('a response slower than the headers timeout: reads are API_UNAVAILABLE, the order is OUTCOME_UNKNOWN', async () => {
    harness = await startHarness('json', {}, { timeouts: { headersMs: 200 }, retry: { maxAttempts: 1 } });
    const quote = await harness.client.getQuote({ symbol: 'USDTBRL', amount: AMOUNT });
    harness.sandbox.setFaults({ '*': { slowRate: 1, slowMs: 3_000 } });

    const started = performance.now();
    const read = await rejectionOf(harness.client.getBalance());
    expect(read).toBeInstanceOf(ApiUnavailableError);
    expect(read.message).toMatch(/timed out waiting for the response headers/);
    expect(performance.now() - started).toBeLessThan(2_000);

    const order = await rejectionOf(harness.client.createOrder({ quoteId: quote.quoteId }));
    expect(order).toBeInstanceOf(OutcomeUnknownError);
    expect(order).toMatchObject({ code: 'OUTCOME_UNKNOWN', outcomeUnknown: true });
  });

  it('the service accepts the order and drops the connection: OUTCOME_UNKNOWN, and the order exists', async () => {
    harness = await startHarness('msgpack', { faults: { createOrder: { acceptThenDropRate: 1 } } });
    const quote = await harness.client.getQuote({ symbol: 'USDTBRL', amount: AMOUNT });
    const error = await rejectionOf(harness.client.createOrder({ quoteId: quote.quoteId }));
    expect(error).toMatchObject({ code: 'OUTCOME_UNKNOWN' });
    expect(harness.sandbox.ledger().map((order) => order.quoteId)).toEqual([quote.quoteId]);
    expect(harness.events.filter((event) => event.operation === 'createOrder')).toHaveLength(1);
  });

  it('a reset without an answer on a read is API_UNAVAILABLE after the bounded retries', async () => {
    harness = await startHarness('json', { faults: { tracking: { resetRate: 1 } } });
    const error = await rejectionOf(harness.client.getTracking('any-order'));
    expect(error).toMatchObject({ code: 'API_UNAVAILABLE', retryable: true });
    expect(harness.events.map((event) => event.attempt)).toEqual([1, 2, 3]);
  });

  it('a connection reset mid-response: reads API_UNAVAILABLE, the order request OUTCOME_UNKNOWN', async () => {
    raw = await startRawServer((_request, response) => resetMidBody(response));
    const events: RequestEvent[] = [];
    client = clientFor(raw.url, events);
    const read = await rejectionOf(client.getQuote({ symbol: 'USDTBRL', amount: AMOUNT }));
    expect(read).toBeInstanceOf(ApiUnavailableError);
    expect(read.status).toBe(200);
    const order = await rejectionOf(client.createOrder({ quoteId: QUOTE_ID }));
    expect(order).toBeInstanceOf(OutcomeUnknownError);
    expect(raw.requests.filter((request) => request.method === 'POST')).toHaveLength(1);
  });

  it('a body that stalls past the body timeout: reads API_UNAVAILABLE, the order request OUTCOME_UNKNOWN', async () => {
    raw = await startRawServer((_request, response) => stallMidBody(response));
    const events: RequestEvent[] = [];
    client = clientFor(raw.url, events, 1);
    const read = await rejectionOf(client.getBalance());
    expect(read).toMatchObject({ code: 'API_UNAVAILABLE' });
    expect(read.message).toMatch(/timed out reading the response body/);
    const order = await rejectionOf(client.createOrder({ quoteId: QUOTE_ID }));
    expect(order).toMatchObject({ code: 'OUTCOME_UNKNOWN' });
  });

  it('a refused connection is API_UNAVAILABLE even for the order request: nothing was sent', async () => {
    const events: RequestEvent[] = [];
    client = clientFor(await closedPortUrl(), events);
    const order = await rejectionOf(client.createOrder({ quoteId: QUOTE_ID }));
    expect(order).toBeInstanceOf(ApiUnavailableError);
    expect(order).toMatchObject({ code: 'API_UNAVAILABLE', outcomeUnknown: false });
    expect(order.message).toMatch(/connection refused/);
    expect(events).toEqual([expect.objectContaining({ operation: 'createOrder', attempt: 1 })]);
  });

  it("the caller's deadline (AbortSignal) cuts a slow call short: order OUTCOME_UNKNOWN, nothing sent once expired", async () => {
    harness = await startHarness('json');
    const quote = await harness.client.getQuote({ symbol: 'USDTBRL', amount: AMOUNT });
    harness.sandbox.setFaults({ '*': { slowRate: 1, slowMs: 3_000 } });

    const started = performance.now();
    const order = await rejectionOf(
      harness.client.createOrder({ quoteId: quote.quoteId }, { signal: AbortSignal.timeout(100) }),
    );
    expect(order).toMatchObject({ code: 'OUTCOME_UNKNOWN' });
    expect(order.message).toMatch(/aborted at the caller's deadline/);
    const read = await rejectionOf(harness.client.getBalance({ signal: AbortSignal.timeout(100) }));
    expect(read).toMatchObject({ code: 'API_UNAVAILABLE' });
    expect(performance.now() - started).toBeLessThan(1_000);

    const sentBefore = harness.events.length;
    const expired = await rejectionOf(
      harness.client.createOrder({ quoteId: quote.quoteId }, { signal: AbortSignal.abort() }),
    );
    expect(expired).toMatchObject({ code: 'API_UNAVAILABLE', outcomeUnknown: false });
    expect(harness.events).toHaveLength(sentBefore);
    expect(harness.events.filter((event) => event.operation === 'getBalance')).toHaveLength(1);
  });
});
