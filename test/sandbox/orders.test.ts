import { afterEach, describe, expect, it } from 'vitest';
import { Decimal } from '../../src/money.js';
import { type RunningSandbox, type SandboxOptions, startSandbox } from '../../src/sandbox/index.js';
import { call, createManualClock } from './http.js';

const running: RunningSandbox[] = [];
async function start(options: SandboxOptions = {}): Promise<RunningSandbox> {
  const sandbox = await startSandbox({ stepMs: 0, ...options });
  running.push(sandbox);
  return sandbox;
}
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.close()));
});

async function placeOrder(sandbox: RunningSandbox, amount = '1000.00') {
  const quote = (await call(sandbox.url, 'GET', `/client/quote?symbols=USDTBRL&amount=${amount}`)).body;
  const order = await call(sandbox.url, 'POST', '/client/order', { body: { quoteId: quote.quoteId } });
  expect(order.status).toBe(200);
  return { quote, order: order.body };
}

describe('sandbox orders', () => {
  it('answers the order record, and GET by id adds status and quoteId', async () => {
    const sandbox = await start();
    const { quote, order } = await placeOrder(sandbox, '2500.50');
    expect(order).toEqual({
      id: expect.any(String),
      amount: 2500.5,
      symbol: 'USDTBRL',
      price: quote.price,
      side: 'BUY',
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    });
    const detail = await call(sandbox.url, 'GET', `/client/orders/${order.id}`);
    expect(detail.body).toEqual({ ...order, status: 'pending', quoteId: quote.quoteId });
  });

  it('moves an order to settled one step at a time, filling in tracking as it goes', async () => {
    const sandbox = await start();
    const { quote, order } = await placeOrder(sandbox);
    const tracking = async () => (await call(sandbox.url, 'GET', `/client/orders/${order.id}/tracking`)).body;
    const cost = Number(quote.totalCost);

    let t = await tracking();
    expect(t).toMatchObject({
      orderId: order.id,
      settlementStatus: 'pending',
      expectedAmount: cost,
      receivedAmount: 0,
    });
    expect(t.withdrawal).toMatchObject({
      status: 'pending',
      transactionId: null,
      token: 'USDT',
      network: 'tron',
    });

    await sandbox.step(order.id);
    t = await tracking();
    expect(t.settlementStatus).toBe('partial');
    expect(t.receivedAmount).toBeGreaterThan(0);
    expect(t.receivedAmount).toBeLessThan(cost);

    await sandbox.step(order.id);
    t = await tracking();
    expect(t).toMatchObject({ settlementStatus: 'paid', receivedAmount: cost, withdrawnAmount: 0 });

    await sandbox.step(order.id);
    t = await tracking();
    expect(t.settlementStatus).toBe('withdrawn');
    expect(t.withdrawnAmount).toBe(Number(quote.totalFilled));
    expect(t.withdrawal).toMatchObject({
      status: 'sent',
      transactionId: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(t.withdrawal.blockNumber).toBeNull();

    const viaControl = await call(sandbox.url, 'POST', `/_sandbox/orders/${order.id}/step`, { body: {} });
    expect(viaControl.body.status).toBe('settled');
    t = await tracking();
    expect(t.withdrawal).toMatchObject({
      type: 'crypto',
      status: 'confirmed',
      fromAddress: expect.stringMatching(/^T/),
      toAddress: expect.stringMatching(/^T/),
      amount: Number(quote.totalFilled),
      blockNumber: expect.stringMatching(/^\d+$/),
      finishedAt: expect.stringMatching(/Z$/),
    });
    await expect(sandbox.step(order.id)).rejects.toThrow(/already settled/);
    expect((await call(sandbox.url, 'POST', `/_sandbox/orders/${order.id}/step`)).status).toBe(409);
    const [view] = sandbox.ledger();
    expect(view?.history.map((h) => h.status)).toEqual([
      'pending',
      'partial',
      'paid',
      'withdrawn',
      'settled',
    ]);
  });

  it('steps orders on its own every stepMs', async () => {
    const sandbox = await start({ stepMs: 15 });
    const { order } = await placeOrder(sandbox);
    await expect
      .poll(async () => (await call(sandbox.url, 'GET', `/client/orders/${order.id}`)).body.status, {
        timeout: 3000,
      })
      .toBe('settled');
  });

  it('keeps the balance consistent with the orders: credit is held until an order is paid', async () => {
    const sandbox = await start({ creditLimit: '3000.00' });
    const balance = async () => (await call(sandbox.url, 'GET', '/client/balance')).body;
    expect(await balance()).toEqual({
      fiat: { currency: 'BRL', balance: '0.00' },
      crypto: { currency: 'USDT', balance: '0.000000' },
      credit: { total: '3000.00', used: '0.00', available: '3000.00' },
      canWithdraw: true,
    });
    const { quote, order } = await placeOrder(sandbox, '2000.00');
    expect((await balance()).credit).toEqual({
      total: '3000.00',
      used: quote.totalCost,
      available: new Decimal('3000.00').minus(quote.totalCost).toFixed(2),
    });
    const second = (await call(sandbox.url, 'GET', '/client/quote?symbols=USDTBRL&amount=2000.00')).body;
    const refused = await call(sandbox.url, 'POST', '/client/order', { body: { quoteId: second.quoteId } });
    expect(refused.status).toBe(400);
    expect(refused.body.message).toMatch(/insufficient credit/);

    await sandbox.step(order.id);
    const partial = await balance();
    expect(new Decimal(partial.fiat.balance).greaterThan(0)).toBe(true);
    expect(partial.credit.used).toBe(quote.totalCost);
    await sandbox.step(order.id);
    expect(await balance()).toMatchObject({
      fiat: { balance: '0.00' },
      crypto: { balance: quote.totalFilled },
      credit: { used: '0.00', available: '3000.00' },
    });
    await sandbox.step(order.id);
    expect((await balance()).crypto.balance).toBe('0.000000');
    // The refused quote was not burnt: with credit released it can still be used.
    expect(
      (await call(sandbox.url, 'POST', '/client/order', { body: { quoteId: second.quoteId } })).status,
    ).toBe(200);
  });

  it('keeps the balance equal to the sum over its orders with many orders at different steps', async () => {
    const sandbox = await start({ creditLimit: '1000000.00' });
    const placed = [];
    for (let i = 0; i < 10; i++) placed.push(await placeOrder(sandbox, `${100 + i * 7}.3${i}`));
    // Order i is stepped i % 5 times: pending, partial, paid, withdrawn and settled orders side by side.
    for (const [i, { order }] of placed.entries())
      for (let s = 0; s < i % 5; s++) await sandbox.step(order.id);
    let used = new Decimal(0);
    let fiat = new Decimal(0);
    let crypto = new Decimal(0);
    for (const [i, { quote }] of placed.entries()) {
      const steps = i % 5;
      if (steps <= 1) used = used.plus(quote.totalCost);
      // The first deposit is half the cost, rounded down to the cent.
      if (steps === 1)
        fiat = fiat.plus(new Decimal(quote.totalCost).div(2).toDecimalPlaces(2, Decimal.ROUND_DOWN));
      if (steps === 2) crypto = crypto.plus(quote.totalFilled);
    }
    expect((await call(sandbox.url, 'GET', '/client/balance')).body).toEqual({
      fiat: { currency: 'BRL', balance: fiat.toFixed(2) },
      crypto: { currency: 'USDT', balance: crypto.toFixed(6) },
      credit: {
        total: '1000000.00',
        used: used.toFixed(2),
        available: new Decimal('1000000.00').minus(used).toFixed(2),
      },
      canWithdraw: true,
    });
  });

  it('answers 404 for unknown order ids', async () => {
    const sandbox = await start();
    for (const path of ['/client/orders/nope', '/client/orders/nope/tracking']) {
      const answer = await call(sandbox.url, 'GET', path);
      expect(answer.status).toBe(404);
      expect(answer.body).toMatchObject({ statusCode: 404, error: 'Not Found' });
    }
    expect((await call(sandbox.url, 'POST', '/_sandbox/orders/nope/step')).status).toBe(404);
    expect((await call(sandbox.url, 'GET', '/client/nothing')).status).toBe(404);
  });
});

describe('sandbox order list', () => {
  it('pages with limit (default 20) and offset as the page number (default 1), newest first', async () => {
    const clock = createManualClock();
    const sandbox = await start({ now: clock.now });
    const ids: string[] = [];
    for (let i = 0; i < 45; i++) {
      ids.push((await placeOrder(sandbox, '10.00')).order.id);
      clock.advance(1000);
    }
    const newestFirst = [...ids].reverse();
    const first = await call(sandbox.url, 'GET', '/client/orders');
    expect(first.body.pagination).toEqual({ page: 1, limit: 20, total: 45, totalPages: 3 });
    expect(first.body.data.map((o: { id: string }) => o.id)).toEqual(newestFirst.slice(0, 20));
    expect(first.body.data[0]).toMatchObject({ status: 'pending', quoteId: expect.any(String) });
    const third = await call(sandbox.url, 'GET', '/client/orders?offset=3');
    expect(third.body.data.map((o: { id: string }) => o.id)).toEqual(newestFirst.slice(40));
    const small = await call(sandbox.url, 'GET', '/client/orders?limit=7&offset=2');
    expect(small.body.pagination).toEqual({ page: 2, limit: 7, total: 45, totalPages: 7 });
    expect(small.body.data.map((o: { id: string }) => o.id)).toEqual(newestFirst.slice(7, 14));
    const beyond = await call(sandbox.url, 'GET', '/client/orders?offset=9');
    expect(beyond.body.data).toEqual([]);
    for (const bad of ['limit=0', 'limit=101', 'limit=x', 'offset=0', 'offset=-1', 'offset=1.5']) {
      expect((await call(sandbox.url, 'GET', `/client/orders?${bad}`)).status, bad).toBe(400);
    }
    expect((await call(sandbox.url, 'GET', '/client/orders?limit=100')).body.data).toHaveLength(45);
  });

  it('filters by status, symbol and an inclusive from/to window', async () => {
    const clock = createManualClock(Date.parse('2030-01-02T10:00:00.000Z'));
    const sandbox = await start({ now: clock.now });
    const a = (await placeOrder(sandbox)).order;
    clock.advance(60_000);
    const b = (await placeOrder(sandbox)).order;
    clock.advance(60_000);
    const c = (await placeOrder(sandbox)).order;
    await sandbox.step(b.id);
    const ids = async (query: string) => {
      const answer = await call(sandbox.url, 'GET', `/client/orders?${query}`);
      expect(answer.status, query).toBe(200);
      return answer.body.data.map((o: { id: string }) => o.id);
    };
    expect(await ids('status=partial')).toEqual([b.id]);
    expect(await ids('status=pending')).toEqual([c.id, a.id]);
    expect(await ids('symbol=USDTBRL')).toEqual([c.id, b.id, a.id]);
    expect(await ids('symbol=BTCBRL')).toEqual([]);
    expect(await ids('from=2030-01-02T10:01:00.000Z')).toEqual([c.id, b.id]);
    expect(await ids('to=2030-01-02T10:01:00Z')).toEqual([b.id, a.id]);
    expect(await ids('from=2030-01-02T10:00:30Z&to=2030-01-02T10:01:30Z')).toEqual([b.id]);
    for (const bad of ['status=done', 'from=yesterday', 'to=2030-13-45T00:00:00Z']) {
      expect((await call(sandbox.url, 'GET', `/client/orders?${bad}`)).status, bad).toBe(400);
    }
  });
});
