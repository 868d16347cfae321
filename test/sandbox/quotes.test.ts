import { afterEach, describe, expect, it } from 'vitest';
import { Decimal } from '../../src/money.js';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/index.js';
import { call, createManualClock } from './http.js';

const running: RunningSandbox[] = [];
async function start(options: Parameters<typeof startSandbox>[0] = {}): Promise<RunningSandbox> {
  const sandbox = await startSandbox({ stepMs: 0, ...options });
  running.push(sandbox);
  return sandbox;
}
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.close()));
});

async function quote(sandbox: RunningSandbox, amount = '2500.00') {
  const answer = await call(sandbox.url, 'GET', `/client/quote?symbols=USDTBRL&amount=${amount}`);
  expect(answer.status).toBe(200);
  return answer.body;
}

describe('sandbox quotes', () => {
  it('answers the quote record with exact decimal text and totalCost never above the amount', async () => {
    const sandbox = await start();
    for (const amount of ['2500.00', '0.07', '1234567.89', '10']) {
      const q = await quote(sandbox, amount);
      expect(Object.keys(q).sort()).toEqual([
        'expiresIn',
        'price',
        'quoteId',
        'symbol',
        'totalCost',
        'totalFilled',
      ]);
      expect(q.symbol).toBe('USDTBRL');
      expect(q.price).toMatch(/^\d+\.\d{4}$/);
      expect(q.totalFilled).toMatch(/^\d+\.\d{6}$/);
      expect(q.totalCost).toMatch(/^\d+\.\d{2}$/);
      expect(q.quoteId).toMatch(/^[A-Za-z0-9]{8,9}$/);
      expect(q.expiresIn).toBe(5);
      const price = new Decimal(q.price);
      const filled = new Decimal(q.totalFilled);
      expect(filled.toFixed()).toBe(
        new Decimal(amount).dividedBy(price).toDecimalPlaces(6, Decimal.ROUND_DOWN).toFixed(),
      );
      expect(new Decimal(q.totalCost).toFixed(2)).toBe(
        price.times(filled).toDecimalPlaces(2, Decimal.ROUND_DOWN).toFixed(2),
      );
      expect(new Decimal(q.totalCost).lessThanOrEqualTo(amount)).toBe(true);
    }
  });

  it('refuses an amount whose crypto quantity a JSON number could not carry exactly', async () => {
    const sandbox = await start();
    for (const amount of ['1000000000.00', '99999999.99', '5000000']) {
      const q = await quote(sandbox, amount);
      // Tracking sends this quantity as a number: it must print back from a double unchanged.
      expect(new Decimal(String(Number(q.totalFilled))).equals(q.totalFilled), amount).toBe(true);
    }
    for (const amount of ['999999999999.99', '100000000000']) {
      const answer = await call(sandbox.url, 'GET', `/client/quote?symbols=USDTBRL&amount=${amount}`);
      expect(answer.status, amount).toBe(400);
      expect(answer.body.message).toMatch(/too large/);
    }
  });

  it('replays the same price walk for the same seed and another one for another seed', async () => {
    const prices = async (seed: number) => {
      const sandbox = await start({ seed, price: '5.1000' });
      const out: string[] = [];
      for (let i = 0; i < 30; i++) out.push((await quote(sandbox)).price);
      return out;
    };
    const first = await prices(7);
    expect(await prices(7)).toEqual(first);
    expect(await prices(8)).not.toEqual(first);
    // The walk stays near its centre.
    for (const price of first) expect(Math.abs(Number(price) - 5.1)).toBeLessThan(0.05);
    expect(new Set(first).size).toBeGreaterThan(5);
  });

  it('accepts an order within 5 seconds and answers 400 "quote expired" from 5 seconds on', async () => {
    const clock = createManualClock();
    const sandbox = await start({ now: clock.now });
    const early = await quote(sandbox);
    const late = await quote(sandbox);
    clock.advance(4_999);
    const accepted = await call(sandbox.url, 'POST', '/client/order', { body: { quoteId: early.quoteId } });
    expect(accepted.status).toBe(200);
    clock.advance(1);
    const expired = await call(sandbox.url, 'POST', '/client/order', { body: { quoteId: late.quoteId } });
    expect(expired.status).toBe(400);
    expect(expired.body).toEqual({
      statusCode: 400,
      error: 'Bad Request',
      message: expect.stringMatching(/expired/),
    });
    expect(sandbox.ledger()).toHaveLength(1);
  });

  it('uses a quote once: the second order with it is a 400', async () => {
    const sandbox = await start();
    const q = await quote(sandbox);
    expect((await call(sandbox.url, 'POST', '/client/order', { body: { quoteId: q.quoteId } })).status).toBe(
      200,
    );
    const again = await call(sandbox.url, 'POST', '/client/order', { body: { quoteId: q.quoteId } });
    expect(again.status).toBe(400);
    expect(again.body.message).toMatch(/already used/);
    expect(sandbox.ledger()).toHaveLength(1);
  });

  it('answers 400 for malformed quote requests', async () => {
    const sandbox = await start();
    for (const query of [
      '',
      '?symbols=USDTBRL',
      '?amount=10',
      '?symbols=BTCBRL&amount=10',
      '?symbols=USDTBRL&amount=abc',
      '?symbols=USDTBRL&amount=-5',
      '?symbols=USDTBRL&amount=1.234',
      '?symbols=USDTBRL&amount=0',
      '?symbols=USDTBRL&amount=1e3',
      '?symbols=USDTBRL&amount=0.01',
      '?symbols=USDTBRL&symbols=USDTBRL&amount=10',
    ]) {
      const answer = await call(sandbox.url, 'GET', `/client/quote${query}`);
      expect(answer.status, query).toBe(400);
      expect(answer.body.statusCode).toBe(400);
    }
  });

  it('validates quoteId and fxRate on order creation', async () => {
    const sandbox = await start();
    const q = await quote(sandbox);
    const cases: [unknown, RegExp][] = [
      [{}, /quoteId/],
      [{ quoteId: 'short' }, /quoteId/],
      [{ quoteId: 'ABCDEFGHIJ' }, /quoteId/],
      [{ quoteId: 'ABCD-EFGH' }, /quoteId/],
      [{ quoteId: 12345678 }, /quoteId/],
      [{ quoteId: 'ZZZZZZZZZ' }, /unknown quoteId/],
      [{ quoteId: q.quoteId, fxRate: 5.4 }, /fxRate/],
      [{ quoteId: q.quoteId, fxRate: '5.4' }, /fxRate/],
      [{ quoteId: q.quoteId, fxRate: '5.432100' + '0' }, /fxRate/],
      [{ quoteId: q.quoteId, fxRate: 'abcdef' }, /fxRate/],
      [{ quoteId: q.quoteId, fxRate: '9.9999' }, /does not match/],
      [[], /object/],
    ];
    for (const [body, message] of cases) {
      const answer = await call(sandbox.url, 'POST', '/client/order', { body });
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.message, JSON.stringify(body)).toMatch(message);
    }
    // None of the refusals used the quote up.
    const placed = await call(sandbox.url, 'POST', '/client/order', {
      body: { quoteId: q.quoteId, fxRate: q.price },
    });
    expect(placed.status).toBe(200);
    expect(placed.body.price).toBe(q.price);
  });
});
