import { afterEach, describe, expect, it } from 'vitest';
import { ApiBadResponseError, OutcomeUnknownError, parseWebhookEvent } from '../../src/api/index.js';
import { Decimal } from '../../src/money.js';
import { FORMATS, type Harness, rejectionOf, startHarness } from './support/harness.js';

const AMOUNT = new Decimal('100');

const CASES = [
  { malformed: 'syntax', field: '(body)', says: /invalid (json|msgpack) body/ },
  { malformed: 'truncate', field: '(body)', says: /invalid (json|msgpack) body/ },
  { malformed: 'types', field: 'symbol', says: /expected string/ },
  { malformed: 'nan-price', field: 'price', says: /decimal text.*"NaN"/ },
  { malformed: 'negative-price', field: 'price', says: /greater than zero/ },
  // Answers that read fine but are not what was asked, or carry a field out of its range (first release:
  // accepted, and a huge expiresIn then failed every cycle with database_error).
  { malformed: 'other-symbol', field: 'symbol', says: /quote is for "BTCBRL", not the requested "USDTBRL"/ },
  { malformed: 'short-quote-id', field: 'quoteId', says: /8 to 9 letters or digits/ },
  { malformed: 'negative-expires', field: 'expiresIn', says: /must not be negative/ },
  { malformed: 'huge-expires', field: 'expiresIn', says: /must be at most 3600000/ },
] as const;

describe.each(FORMATS)('malformed bodies are refused with the operation and field named (%s)', (format) => {
  let harness: Harness | undefined;
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });

  it.each(CASES)(
    'a $malformed quote is API_BAD_RESPONSE on $field, not retried',
    async ({ malformed, field, says }) => {
      harness = await startHarness(format, { faults: { quote: { malformedRate: 1, malformed } } });
      const error = await rejectionOf(harness.client.getQuote({ symbol: 'USDTBRL', amount: AMOUNT }));
      expect(error).toBeInstanceOf(ApiBadResponseError);
      expect(error).toMatchObject({ code: 'API_BAD_RESPONSE', operation: 'getQuote', field, status: 200 });
      expect(error.message).toMatch(/^getQuote: bad response: /);
      expect(error.message).toMatch(says);
      expect(harness.events).toHaveLength(1);
    },
  );

  it('a quote without expiresIn is accepted: the worker keeps its own deadline', async () => {
    harness = await startHarness(format, {
      faults: { quote: { malformedRate: 1, malformed: 'no-expires' } },
    });
    const quote = await harness.client.getQuote({ symbol: 'USDTBRL', amount: AMOUNT });
    expect(quote.expiresIn).toBeUndefined();
    expect(quote.quoteId).toMatch(/^[A-Za-z0-9]{8,9}$/);
  });

  it('a tracking record for another order is refused, naming both orders', async () => {
    harness = await startHarness(format);
    const quote = await harness.client.getQuote({ symbol: 'USDTBRL', amount: AMOUNT });
    const order = await harness.client.createOrder({ quoteId: quote.quoteId });
    harness.sandbox.setFaults({ tracking: { malformedRate: 1, malformed: 'other-order-id' } });
    const error = await rejectionOf(harness.client.getTracking(order.id));
    expect(error).toMatchObject({ code: 'API_BAD_RESPONSE', operation: 'getTracking', field: 'orderId' });
    expect(error.message).toContain(`not the requested "${order.id}"`);
  });

  it('a negative price inside the order list names the list item', async () => {
    harness = await startHarness(format);
    const quote = await harness.client.getQuote({ symbol: 'USDTBRL', amount: AMOUNT });
    await harness.client.createOrder({ quoteId: quote.quoteId });
    harness.sandbox.setFaults({ listOrders: { malformedRate: 1, malformed: 'negative-price' } });
    const error = await rejectionOf(harness.client.listOrders());
    expect(error).toMatchObject({
      code: 'API_BAD_RESPONSE',
      field: 'data[0].price',
      operation: 'listOrders',
    });
  });

  it.each(['syntax', 'truncate', 'types'] as const)(
    'an unreadable 2xx answer to the order request (%s) is OUTCOME_UNKNOWN, and the order exists',
    async (malformed) => {
      harness = await startHarness(format, { faults: { createOrder: { malformedRate: 1, malformed } } });
      const quote = await harness.client.getQuote({ symbol: 'USDTBRL', amount: AMOUNT });
      const error = await rejectionOf(harness.client.createOrder({ quoteId: quote.quoteId }));
      expect(error).toBeInstanceOf(OutcomeUnknownError);
      expect(error).toMatchObject({ code: 'OUTCOME_UNKNOWN', status: 200 });
      expect(error.cause).toBeInstanceOf(ApiBadResponseError);
      expect(harness.sandbox.ledger().map((order) => order.quoteId)).toEqual([quote.quoteId]);
    },
  );
});

describe('webhook event bodies', () => {
  const order = {
    id: 'o-1',
    amount: 2500,
    symbol: 'USDTBRL',
    price: '5.4321',
    side: 'BUY',
    timestamp: '2030-01-02T03:04:05.000Z',
  };

  it('parses an order event into domain values', () => {
    const event = parseWebhookEvent({ event: 'order', data: { ...order, extra: 'tolerated' } });
    expect(event.event).toBe('order');
    if (event.event !== 'order') return;
    expect(event.data.price.eq('5.4321')).toBe(true);
    expect(event.data.timestamp.toISOString()).toBe('2030-01-02T03:04:05.000Z');
  });

  it.each([
    [{ event: 'order', data: { ...order, price: 'NaN' } }, 'data.price'],
    [{ event: 'order', data: { ...order, price: '-5.4' } }, 'data.price'],
    [{ event: 'order', data: { ...order, timestamp: 'yesterday' } }, 'data.timestamp'],
    [
      {
        event: 'deposit_fiat',
        data: { orderId: 'o-1', amount: '1e3', currency: 'BRL', receivedAt: order.timestamp },
      },
      'data.amount',
    ],
    [{ event: 'mystery', data: {} }, 'event'],
    ['{"event":"order"}', '(body)'],
  ])('refuses %j naming %s', (body, field) => {
    let caught: unknown;
    try {
      parseWebhookEvent(body);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ApiBadResponseError);
    expect(caught).toMatchObject({ code: 'API_BAD_RESPONSE', operation: 'webhookEvent', field });
  });
});
