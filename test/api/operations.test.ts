import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { unpack } from 'msgpackr';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { formatFxRate, parseWebhookEvent, type WebhookEvent } from '../../src/api/index.js';
import { Decimal, isDecimal } from '../../src/money.js';
import { FORMATS, type Harness, startHarness } from './support/harness.js';

/** Collects webhook deliveries; `next(kind)` resolves when one of that kind has arrived. */
async function startReceiver() {
  const received: unknown[] = [];
  const waiters: (() => void)[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const bytes = Buffer.concat(chunks);
      const isMsgpack = request.headers['content-type']?.includes('msgpack');
      received.push(isMsgpack ? unpack(bytes) : JSON.parse(bytes.toString('utf8')));
      response.end();
      for (const wake of waiters.splice(0)) wake();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  const events = () => received.map((body) => parseWebhookEvent(body));
  async function next(kind: WebhookEvent['event']): Promise<WebhookEvent> {
    for (;;) {
      const found = events().find((event) => event.event === kind);
      if (found) return found;
      await new Promise<void>((resolve) => waiters.push(resolve));
    }
  }
  return { url, next, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe.each(FORMATS)('every operation over real HTTP (%s)', (format) => {
  let harness: Harness;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    harness = await startHarness(format, { webhookFormat: format });
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await harness.close();
    await receiver.close();
  });

  it('quotes, orders, tracks, lists, reads the balance, and receives the events it configured', async () => {
    const { client, sandbox } = harness;
    for (const kind of ['order', 'deposit_fiat', 'withdrawal_crypto']) {
      const config = await client.setWebhookConfig({ url: receiver.url, methodId: kind, active: true });
      expect(config.url).toBe(receiver.url);
    }
    const config = await client.getWebhookConfig();
    expect(config.events.filter((event) => event.active).map((event) => event.methodId)).toEqual(
      expect.arrayContaining(['order', 'deposit_fiat', 'withdrawal_crypto']),
    );

    const quote = await client.getQuote({ symbol: 'USDTBRL', amount: new Decimal('2500.00') });
    expect(isDecimal(quote.price) && isDecimal(quote.totalCost) && isDecimal(quote.totalFilled)).toBe(true);
    expect(quote.price.gt(0)).toBe(true);
    expect(quote.totalCost.lte('2500')).toBe(true);
    expect(quote.quoteId).toMatch(/^[A-Za-z0-9]{8,9}$/);

    const order = await client.createOrder({ quoteId: quote.quoteId, fxRate: formatFxRate(quote.price) });
    expect(order.side).toBe('BUY');
    expect(order.amount.eq('2500')).toBe(true);
    expect(order.price.eq(quote.price)).toBe(true);
    expect(order.timestamp).toBeInstanceOf(Date);

    const detail = await client.getOrder(order.id);
    expect(detail).toMatchObject({ id: order.id, status: 'pending', quoteId: quote.quoteId });
    expect(sandbox.ledger().find((entry) => entry.id === order.id)).toBeDefined();

    const orderEvent = await receiver.next('order');
    expect(orderEvent.event === 'order' && orderEvent.data.id).toBe(order.id);

    await sandbox.step(order.id);
    const deposit = await receiver.next('deposit_fiat');
    if (deposit.event !== 'deposit_fiat') throw new Error('unreachable');
    expect(deposit.data).toMatchObject({ orderId: order.id, currency: 'BRL' });
    expect(deposit.data.amount.gt(0)).toBe(true);
    expect(deposit.data.receivedAt).toBeInstanceOf(Date);

    const pendingTracking = await client.getTracking(order.id);
    expect(pendingTracking.settlementStatus).toBe('partial');
    expect(pendingTracking.expectedAmount.eq(quote.totalCost)).toBe(true);
    expect(pendingTracking.withdrawal?.transactionId ?? null).toBeNull();

    for (let step = 0; step < 3; step++) await sandbox.step(order.id);
    const withdrawal = await receiver.next('withdrawal_crypto');
    expect(withdrawal.event === 'withdrawal_crypto' && withdrawal.data.orderId).toBe(order.id);
    const tracking = await client.getTracking(order.id);
    expect(tracking.settlementStatus).toBe('settled');
    expect(tracking.withdrawnAmount.eq(quote.totalFilled)).toBe(true);
    expect(tracking.withdrawal?.transactionId).toEqual(expect.any(String));
    expect(tracking.withdrawal?.finishedAt).toBeInstanceOf(Date);

    const page = await client.listOrders({ status: 'settled', symbol: 'USDTBRL', limit: 10, page: 1 });
    expect(page.data.map((item) => item.id)).toContain(order.id);
    expect(page.pagination).toMatchObject({ page: 1, limit: 10 });
    const window = await client.listOrders({ from: new Date(Date.now() + 86_400_000) });
    expect(window.data).toEqual([]);

    const balance = await client.getBalance();
    expect(balance.fiat.currency).toBe('BRL');
    expect(balance.crypto.currency).toBe('USDT');
    expect(balance.credit.total.eq(balance.credit.used.plus(balance.credit.available))).toBe(true);
    expect(typeof balance.canWithdraw).toBe('boolean');

    await vi.waitFor(async () => {
      const logs = await client.getWebhookLogs('order', { page: 1, limit: 100 });
      expect(logs.data.some((entry) => entry.success && entry.methodId === 'order')).toBe(true);
    });
    const all = await client.getAllWebhookLogs({ page: 1, pageSize: 50 });
    expect(all.pagination.total).toBeGreaterThanOrEqual(3);
    expect(all.data[0]?.createdAt).toBeInstanceOf(Date);
  });
});
