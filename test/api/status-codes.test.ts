import { afterEach, describe, expect, it } from 'vitest';
import {
  ApiForbiddenError,
  ApiNotFoundError,
  ApiRejectedError,
  ApiServerError,
  ApiUnauthorizedError,
  OutcomeUnknownError,
  QuoteExpiredError,
} from '../../src/api/index.js';
import { Decimal } from '../../src/money.js';
import { FORMATS, type Harness, rejectionOf, startHarness } from './support/harness.js';

const AMOUNT = new Decimal('100');

describe.each(FORMATS)('each status code becomes its error (%s)', (format) => {
  let harness: Harness | undefined;
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });

  it('400 for an expired quote is QUOTE_EXPIRED, with status and body kept', async () => {
    let clock = Date.parse('2030-01-02T03:04:05Z');
    harness = await startHarness(format, { now: () => clock });
    const quote = await harness.client.getQuote({ symbol: 'USDTBRL', amount: AMOUNT });
    clock += 5_001;
    const error = await rejectionOf(harness.client.createOrder({ quoteId: quote.quoteId }));
    expect(error).toBeInstanceOf(QuoteExpiredError);
    expect(error).toMatchObject({
      code: 'QUOTE_EXPIRED',
      status: 400,
      retryable: false,
      outcomeUnknown: false,
    });
    expect(error.body).toMatchObject({ statusCode: 400, message: expect.stringContaining('expired') });
    expect(harness.sandbox.ledger()).toHaveLength(0);
  });

  it('other 400s are API_REJECTED (a used quote, an unknown quote)', async () => {
    harness = await startHarness(format);
    const quote = await harness.client.getQuote({ symbol: 'USDTBRL', amount: AMOUNT });
    await harness.client.createOrder({ quoteId: quote.quoteId });
    const reused = await rejectionOf(harness.client.createOrder({ quoteId: quote.quoteId }));
    expect(reused).toBeInstanceOf(ApiRejectedError);
    expect(reused).toMatchObject({ code: 'API_REJECTED', status: 400, operation: 'createOrder' });
    expect(reused).not.toBeInstanceOf(QuoteExpiredError);
    const unknown = await rejectionOf(harness.client.createOrder({ quoteId: 'ZZZZ9999' }));
    expect(unknown).toMatchObject({ code: 'API_REJECTED', status: 400 });
  });

  it('401 for an unknown token is API_UNAUTHORIZED', async () => {
    harness = await startHarness(format, {}, { token: 'not-a-known-token' });
    const error = await rejectionOf(harness.client.getBalance());
    expect(error).toBeInstanceOf(ApiUnauthorizedError);
    expect(error).toMatchObject({ code: 'API_UNAUTHORIZED', status: 401, retryable: false });
    expect(harness.events).toHaveLength(1);
  });

  it('403 for a read-only token placing an order or configuring webhooks is API_FORBIDDEN', async () => {
    harness = await startHarness(
      format,
      { readTokens: ['read-only-token-1'] },
      { token: 'read-only-token-1' },
    );
    const quote = await harness.client.getQuote({ symbol: 'USDTBRL', amount: AMOUNT });
    const order = await rejectionOf(harness.client.createOrder({ quoteId: quote.quoteId }));
    expect(order).toBeInstanceOf(ApiForbiddenError);
    expect(order).toMatchObject({ code: 'API_FORBIDDEN', status: 403 });
    const config = await rejectionOf(
      harness.client.setWebhookConfig({ url: 'http://127.0.0.1:9/hook', methodId: 'order', active: true }),
    );
    expect(config).toMatchObject({ code: 'API_FORBIDDEN', status: 403 });
  });

  it('404 for an unknown order is API_NOT_FOUND', async () => {
    harness = await startHarness(format);
    const error = await rejectionOf(harness.client.getOrder('no-such-order'));
    expect(error).toBeInstanceOf(ApiNotFoundError);
    expect(error).toMatchObject({ code: 'API_NOT_FOUND', status: 404, operation: 'getOrder' });
    const tracking = await rejectionOf(harness.client.getTracking('no-such-order'));
    expect(tracking).toMatchObject({ code: 'API_NOT_FOUND', operation: 'getTracking' });
  });

  it('500 is API_SERVER_ERROR on reads, OUTCOME_UNKNOWN on the order request', async () => {
    harness = await startHarness(format, {
      faults: { balance: { errorRate: 1 }, createOrder: { errorRate: 1 } },
    });
    const read = await rejectionOf(harness.client.getBalance());
    expect(read).toBeInstanceOf(ApiServerError);
    expect(read).toMatchObject({ code: 'API_SERVER_ERROR', status: 500, retryable: true });

    const quote = await harness.client.getQuote({ symbol: 'USDTBRL', amount: AMOUNT });
    const order = await rejectionOf(harness.client.createOrder({ quoteId: quote.quoteId }));
    expect(order).toBeInstanceOf(OutcomeUnknownError);
    expect(order).toMatchObject({
      code: 'OUTCOME_UNKNOWN',
      status: 500,
      retryable: false,
      outcomeUnknown: true,
    });
  });
});
