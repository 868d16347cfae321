import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ApiInvalidArgumentError,
  createPurchaseClient,
  formatFxRate,
  type PurchaseClient,
} from '../../src/api/index.js';
import { Decimal } from '../../src/money.js';
import { rejectionOf } from './support/harness.js';
import { type RawServer, startRawServer } from './support/raw-server.js';

describe('formatFxRate', () => {
  it.each([
    ['5.4321', '5.4321'],
    ['5.43215', '5.4322'],
    ['5.43225', '5.4322'],
    ['5.4', '5.4000'],
    ['12.34565', '12.3456'],
    ['99.99994', '99.9999'],
    ['0.00006', '0.0001'],
  ])('%s → %s (4 decimals, half-even)', (price, text) => {
    expect(formatFxRate(new Decimal(price))).toBe(text);
  });

  it.each(['99.99995', '1000', '0.00004', '0', '-5.4'])(
    'refuses %s, which does not fit 6-7 characters or is not positive',
    (price) => {
      expect(() => formatFxRate(new Decimal(price))).toThrow(ApiInvalidArgumentError);
    },
  );
});

describe('arguments are checked before any request', () => {
  let raw: RawServer;
  let client: PurchaseClient;
  beforeAll(async () => {
    raw = await startRawServer((_request, response) => response.writeHead(500).end());
    client = createPurchaseClient({ baseUrl: raw.url, token: 'argument-token' });
  });
  afterAll(async () => {
    await client.close();
    await raw.close();
  });

  const cases: [string, string, () => Promise<unknown>][] = [
    ['quoteId too short', 'quoteId', () => client.createOrder({ quoteId: 'abc1234' })],
    ['quoteId too long', 'quoteId', () => client.createOrder({ quoteId: 'abcd123456' })],
    ['quoteId with symbols', 'quoteId', () => client.createOrder({ quoteId: 'abcd-123' })],
    ['fxRate too short', 'fxRate', () => client.createOrder({ quoteId: 'abcd1234', fxRate: '5.432' })],
    ['fxRate too long', 'fxRate', () => client.createOrder({ quoteId: 'abcd1234', fxRate: '5.432100' })],
    ['fxRate not decimal', 'fxRate', () => client.createOrder({ quoteId: 'abcd1234', fxRate: '5,4321' })],
    ['fxRate exponent', 'fxRate', () => client.createOrder({ quoteId: 'abcd1234', fxRate: '5.4e+0' })],
    ['amount zero', 'amount', () => client.getQuote({ symbol: 'USDTBRL', amount: new Decimal(0) })],
    ['amount NaN', 'amount', () => client.getQuote({ symbol: 'USDTBRL', amount: new Decimal(Number.NaN) })],
    ['symbol empty', 'symbol', () => client.getQuote({ symbol: '', amount: new Decimal(1) })],
    ['log limit 0', 'limit', () => client.getWebhookLogs('order', { limit: 0 })],
    ['log limit 101', 'limit', () => client.getWebhookLogs('order', { limit: 101 })],
    ['log page 0', 'page', () => client.getWebhookLogs('order', { page: 0 })],
    ['all logs page -1', 'page', () => client.getAllWebhookLogs({ page: -1 })],
    ['all logs pageSize 1.5', 'pageSize', () => client.getAllWebhookLogs({ pageSize: 1.5 })],
    ['orders page 0', 'page', () => client.listOrders({ page: 0 })],
    ['orders limit 0', 'limit', () => client.listOrders({ limit: 0 })],
    ['orders bad status', 'status', () => client.listOrders({ status: 'done' as never })],
    ['orders bad date', 'from', () => client.listOrders({ from: new Date('nope') })],
    ['order id empty', 'id', () => client.getOrder('')],
    [
      'webhook url relative',
      'url',
      () => client.setWebhookConfig({ url: '/hook', methodId: 'order', active: true }),
    ],
    [
      'webhook active text',
      'active',
      () => client.setWebhookConfig({ url: 'http://h/x', methodId: 'order', active: 'yes' as never }),
    ],
  ];

  it.each(cases)('%s: API_INVALID_ARGUMENT naming %s', async (_name, field, call) => {
    const error = await rejectionOf(call());
    expect(error).toBeInstanceOf(ApiInvalidArgumentError);
    expect(error).toMatchObject({ code: 'API_INVALID_ARGUMENT', field, retryable: false });
    expect(error.message).toContain(field);
    expect(raw.requests).toHaveLength(0);
  });

  it('the limits at their bounds are accepted and sent', async () => {
    await rejectionOf(client.getWebhookLogs('order', { page: 1, limit: 100 }));
    expect(raw.requests.at(-1)?.url).toBe('/client/webhook/order/logs?page=1&limit=100');
  });
});
