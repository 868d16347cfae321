/**
 * Issue 32 item 3: a service that says "not yet" with an empty string (`"finishedAt": ""` on a withdrawal
 * still in progress) had every tracking poll refused whole. An empty string where a value may be absent
 * now reads as absent, for every optional field of the tracking record and of the webhook events; a
 * malformed non-empty value is still refused with its field named.
 */
import { pack } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { ApiBadResponseError, parseWebhookEvent, type WireFormat } from '../../src/api/index.js';
import { FORMATS, rejectionOf } from './support/harness.js';
import { clientAnsweredWith } from './support/raw-server.js';

const WITHDRAWAL = {
  type: 'crypto',
  status: 'processing',
  transactionId: '0xabc123',
  token: 'USDT',
  network: 'TRON',
  fromAddress: 'TFrom1',
  toAddress: 'TTo1',
  amount: 18.5,
  blockNumber: '812345',
  finishedAt: '2026-03-02T12:00:00.000Z',
};
const TRACKING = {
  orderId: 'o-1',
  settlementStatus: 'settled',
  expectedAmount: 100,
  receivedAmount: 100,
  withdrawnAmount: 0,
  withdrawal: WITHDRAWAL,
};

/** Every optional field of a withdrawal, with a non-empty value that is still wrong. */
const OPTIONAL_FIELDS = [
  { field: 'transactionId', malformed: 42 },
  { field: 'token', malformed: true },
  { field: 'network', malformed: 7 },
  { field: 'fromAddress', malformed: ['TFrom1'] },
  { field: 'toAddress', malformed: { address: 'TTo1' } },
  { field: 'amount', malformed: 'eighteen' },
  { field: 'blockNumber', malformed: 812345 },
  { field: 'finishedAt', malformed: 'tomorrow' },
] as const;

async function trackingFrom(format: WireFormat, body: unknown) {
  const bytes = format === 'json' ? JSON.stringify(body) : pack(body);
  return (await clientAnsweredWith(format, bytes, 'empty-token')).getTracking('o-1');
}

describe.each(FORMATS)('tracking record (%s)', (format) => {
  it.each(OPTIONAL_FIELDS)('withdrawal.$field: "" reads as not known yet', async ({ field }) => {
    const tracking = await trackingFrom(format, { ...TRACKING, withdrawal: { ...WITHDRAWAL, [field]: '' } });
    expect(tracking.withdrawal?.[field]).toBeNull();
    expect(tracking.withdrawal?.type).toBe('crypto');
  });

  it('every optional field empty at once, as on a withdrawal just started', async () => {
    const empty = Object.fromEntries(OPTIONAL_FIELDS.map(({ field }) => [field, '']));
    const tracking = await trackingFrom(format, { ...TRACKING, withdrawal: { ...WITHDRAWAL, ...empty } });
    expect(tracking.withdrawal).toEqual({
      type: 'crypto',
      status: 'processing',
      ...Object.fromEntries(OPTIONAL_FIELDS.map(({ field }) => [field, null])),
    });
  });

  it('withdrawal: "" reads as no withdrawal yet', async () => {
    expect((await trackingFrom(format, { ...TRACKING, withdrawal: '' })).withdrawal).toBeNull();
  });

  it.each(OPTIONAL_FIELDS)(
    'withdrawal.$field: a malformed value is refused, naming the field',
    async ({ field, malformed }) => {
      const error = await rejectionOf(
        trackingFrom(format, { ...TRACKING, withdrawal: { ...WITHDRAWAL, [field]: malformed } }),
      );
      expect(error).toBeInstanceOf(ApiBadResponseError);
      expect(error).toMatchObject({ operation: 'getTracking', field: `withdrawal.${field}` });
    },
  );

  it.each(['orderId', 'expectedAmount', 'receivedAmount', 'withdrawnAmount'])(
    'a required field (%s) stays required: "" is refused',
    async (field) => {
      const error = await rejectionOf(trackingFrom(format, { ...TRACKING, [field]: '' }));
      expect(error).toMatchObject({ code: 'API_BAD_RESPONSE', field });
    },
  );
});

describe('webhook events', () => {
  const withdrawalEvent = (data: Record<string, unknown>) => ({
    event: 'withdrawal_crypto',
    data: { orderId: 'o-1', ...WITHDRAWAL, ...data },
  });

  it.each(OPTIONAL_FIELDS)('withdrawal event data.$field: "" reads as not known yet', ({ field }) => {
    const event = parseWebhookEvent(withdrawalEvent({ [field]: '' }));
    expect(event.event).toBe('withdrawal_crypto');
    expect((event.data as unknown as Record<string, unknown>)[field]).toBeNull();
  });

  it.each(OPTIONAL_FIELDS)(
    'withdrawal event data.$field: a malformed value is refused, naming the field',
    ({ field, malformed }) => {
      expect(() => parseWebhookEvent(withdrawalEvent({ [field]: malformed }))).toThrow(
        expect.objectContaining({ code: 'API_BAD_RESPONSE', field: `data.${field}` }),
      );
    },
  );

  const QUOTE = {
    symbol: 'USDTBRL',
    price: '5.4321',
    totalCost: '100',
    totalFilled: '18.4',
    quoteId: 'AbCd1234',
  };

  it('quote event data.expiresIn: "" reads as not known', () => {
    const event = parseWebhookEvent({ event: 'quote', data: { ...QUOTE, expiresIn: '' } });
    expect((event.data as { expiresIn?: number }).expiresIn).toBeUndefined();
    expect(event.data).toMatchObject({ quoteId: 'AbCd1234' });
  });

  it('quote event data.expiresIn: a malformed value is refused, naming the field', () => {
    expect(() => parseWebhookEvent({ event: 'quote', data: { ...QUOTE, expiresIn: 'soon' } })).toThrow(
      expect.objectContaining({ field: 'data.expiresIn' }),
    );
  });

  it.each(['orderId', 'currency', 'receivedAt'])(
    'a required deposit field (%s) stays required: "" is refused',
    (field) => {
      const data = {
        orderId: 'o-1',
        amount: 5,
        currency: 'BRL',
        receivedAt: '2026-03-02T12:00:00.000Z',
        [field]: '',
      };
      expect(() => parseWebhookEvent({ event: 'deposit_fiat', data })).toThrow(
        expect.objectContaining({ field: `data.${field}` }),
      );
    },
  );
});
