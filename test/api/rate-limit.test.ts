import { afterEach, describe, expect, it } from 'vitest';
import {
  ApiRateLimitedError,
  createPurchaseClient,
  createServiceGate,
  type PurchaseClient,
} from '../../src/api/index.js';
import { Decimal } from '../../src/money.js';
import { type Harness, rejectionOf, startHarness } from './support/harness.js';
import { type RawServer, startRawServer } from './support/raw-server.js';

const AMOUNT = new Decimal('100');

/**
 * The service's rate limits, as it asks (429 and Retry-After), and the replica's own pace
 * (TREASURY_API_RATE_LIMIT). On the first release a 429 was an outage: retried on the client's short backoff,
 * Retry-After ignored.
 */
describe('rate limits', () => {
  let harness: Harness | undefined;
  let raw: RawServer | undefined;
  let client: PurchaseClient | undefined;
  afterEach(async () => {
    await harness?.close();
    await client?.close();
    await raw?.close();
    [harness, raw, client] = [undefined, undefined, undefined];
  });

  it.each(['seconds', 'date'] as const)(
    'a 429 with Retry-After (%s) pauses every request of the replica for that long, then the read goes through',
    async (form) => {
      const paused: number[] = [];
      const gate = createServiceGate({ onPause: ({ ms }) => paused.push(ms) });
      harness = await startHarness(
        'json',
        { faults: { quote: { rateLimit: 1, retryAfter: form, retryAfterSeconds: 1 } } },
        { gate, retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 2 } },
      );
      const started = Date.now();
      await harness.client.getQuote({ symbol: 'USDTBRL', amount: AMOUNT });
      const second = await harness.client.getQuote({ symbol: 'USDTBRL', amount: AMOUNT });
      expect(second.quoteId).toMatch(/^[A-Za-z0-9]{8,9}$/);
      expect(harness.events.map((event) => event.status)).toEqual([200, 429, 200]);
      expect(harness.events[1]).toMatchObject({ errorCode: 'API_RATE_LIMITED' });
      expect(paused).toHaveLength(1);
      expect(paused[0]).toBeGreaterThanOrEqual(form === 'seconds' ? 1_000 : 1);
      // The retry waited the pause out instead of the client's 1–2 ms backoff.
      expect(Date.now() - started).toBeGreaterThanOrEqual(paused[0]!);
    },
  );

  it('a 429 to the order request is a definite rejection: nothing placed, not OUTCOME_UNKNOWN, not retried', async () => {
    harness = await startHarness(
      'json',
      { faults: { createOrder: { rateLimit: 0, retryAfterSeconds: 0 } } },
      {
        gate: createServiceGate(),
      },
    );
    const quote = await harness.client.getQuote({ symbol: 'USDTBRL', amount: AMOUNT });
    const error = await rejectionOf(harness.client.createOrder({ quoteId: quote.quoteId }));
    expect(error).toBeInstanceOf(ApiRateLimitedError);
    expect(error).toMatchObject({ code: 'API_RATE_LIMITED', outcomeUnknown: false, status: 429 });
    expect(harness.sandbox.ledger()).toEqual([]);
    expect(harness.events.filter((event) => event.operation === 'createOrder')).toHaveLength(1);
  });

  it('a wait at the gate never outlives the caller’s deadline', async () => {
    const gate = createServiceGate();
    gate.pause('getQuote', 10_000);
    harness = await startHarness('json', {}, { gate });
    const error = await rejectionOf(
      harness.client.getQuote({ symbol: 'USDTBRL', amount: AMOUNT }, { signal: AbortSignal.timeout(50) }),
    );
    expect(error).toMatchObject({ code: 'API_UNAVAILABLE' });
    expect(error.message).toMatch(/deadline passed while waiting for the service's rate limit/);
    expect(harness.events).toEqual([]);
  });

  it('the replica’s own pace holds under a burst: at most the limit in any second, counted at the server', async () => {
    raw = await startRawServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          fiat: { currency: 'BRL', balance: '0.00' },
          crypto: { currency: 'USDT', balance: '0.000000' },
          credit: { total: '1.00', used: '0.00', available: '1.00' },
          canWithdraw: true,
        }),
      );
    });
    const limit = 20;
    client = createPurchaseClient({
      baseUrl: raw.url,
      token: 'pace-token',
      gate: createServiceGate({ ratePerSecond: limit }),
      connections: 16,
    });
    await Promise.all(Array.from({ length: 45 }, () => client!.getBalance()));
    const arrivals = raw.requests.map((request) => request.at).sort((a, b) => a - b);
    expect(arrivals).toHaveLength(45);
    for (let i = 0; i < arrivals.length; i++) {
      const inOneSecond = arrivals.filter((at) => at >= arrivals[i]! && at < arrivals[i]! + 1_000).length;
      // The pace spaces requests 50 ms apart; a second holds 20 of them, one more at its edge.
      expect(inOneSecond).toBeLessThanOrEqual(limit + 1);
    }
    expect(arrivals.at(-1)! - arrivals[0]!).toBeGreaterThanOrEqual(2_000);
  });
});

/**
 * The pace learnt from the service's 429s (issue 32, item 4): additive increase, multiplicative decrease,
 * never above TREASURY_API_RATE_LIMIT. The gate's own clock is injected; admissions that would wait are not
 * awaited (their slots are what the test reads) and are called off after each test.
 */
describe('the pace learnt from 429s', () => {
  let waits = new AbortController();
  afterEach(() => {
    waits.abort();
    waits = new AbortController();
  });

  function gateAt(ratePerSecond?: number) {
    let now = 10_000;
    const paces: number[] = [];
    const gate = createServiceGate({
      ...(ratePerSecond === undefined ? {} : { ratePerSecond }),
      now: () => now,
      onPace: (pace) => paces.push(pace),
    });
    const admit = () => void gate.admit('getBalance', waits.signal).catch(() => undefined);
    return {
      gate,
      paces,
      admit,
      advance(ms: number) {
        now += ms;
      },
    };
  }

  it('has none before the first 429 without a configured rate, then keeps 0.8 of what the service accepted', () => {
    const { gate, paces, admit } = gateAt();
    expect(gate.pace()).toBeUndefined();
    for (let i = 0; i < 20; i++) admit();
    for (let i = 0; i < 5; i++) gate.answered();
    gate.pause('getQuote', 1_000);
    expect(gate.pace()).toBe(4);
    // The other 429s of the same burst say nothing new: one decrease a second.
    gate.pause('getQuote', 1_000);
    expect(paces).toEqual([4]);
  });

  it('never goes below one request a second, and before any answer starts from the rate it sent', () => {
    const { gate, admit, advance } = gateAt();
    for (let i = 0; i < 10; i++) admit();
    gate.pause('getQuote', 1_000);
    expect(gate.pace()).toBe(8);
    for (let round = 0; round < 12; round++) {
      advance(1_000);
      gate.pause('getQuote', 1_000);
    }
    expect(gate.pace()).toBe(1);
  });

  it('adds one request a second per 5 s with requests queued for the pace, none while idle, never above the cap', () => {
    const { gate, admit, advance } = gateAt(6);
    for (let i = 0; i < 5; i++) gate.answered();
    gate.pause('getQuote', 0);
    expect(gate.pace()).toBe(4);
    // Idle for a minute: nothing earned.
    advance(60_000);
    admit();
    expect(gate.pace()).toBe(4);
    // Busy: requests queue behind the pace.
    for (let second = 0; second < 30; second++) {
      advance(1_000);
      for (let i = 0; i < 8; i++) admit();
    }
    expect(gate.pace()).toBe(6);
  });
});
