import { describe, expect, it } from 'vitest';
import { figureDifferences, figuresFit, matchOrders } from '../../src/engine/order-matching.js';
import { d } from './support/harness.js';

const cycle = { quoteId: 'QUOTE0001', symbol: 'USDTBRL', amount: d('100'), price: d('5.40012') };
const order = (id: string, quoteId?: string, price = '5.40012', amount = '100.00') => ({
  id,
  symbol: 'USDTBRL',
  amount: d(amount),
  price: d(price),
  ...(quoteId === undefined ? {} : { quoteId }),
});

describe('matching an unsure cycle against listed orders', () => {
  it.each([
    [
      'one order with the cycle’s quoteId',
      [order('a', 'QUOTE0001'), order('b', 'OTHER0001')],
      { kind: 'single', orderId: 'a' },
    ],
    [
      'the confirmed one wins over an unconfirmed one',
      [order('a'), order('b', 'QUOTE0001')],
      { kind: 'single', orderId: 'b' },
    ],
    ['a single order without quoteId', [order('a')], { kind: 'single', orderId: 'a' }],
    // The defect of the first release: figures decided before the quoteId, so our order was "absent".
    ['our quoteId with another price', [order('a', 'QUOTE0001', '5.4001')], { kind: 'single', orderId: 'a' }],
    [
      'our quoteId with a rounded amount',
      [order('a', 'QUOTE0001', '5.40012', '99.99')],
      { kind: 'single', orderId: 'a' },
    ],
    ['a different quoteId refutes', [order('a', 'OTHER0001')], { kind: 'none' }],
    ['nothing listed', [], { kind: 'none' }],
    ['two without quoteId', [order('a'), order('b')], { kind: 'ambiguous', orderIds: ['a', 'b'] }],
    [
      'two with the same quoteId',
      [order('a', 'QUOTE0001'), order('b', 'QUOTE0001')],
      { kind: 'ambiguous', orderIds: ['a', 'b'] },
    ],
  ])('%s', (_name, candidates, expected) => {
    expect(matchOrders(cycle, candidates)).toEqual(expected);
  });
});

describe('figures of an order without quoteId', () => {
  const tolerance = d('0.5');
  it('fit within the tolerance percent of the quote, by value (100 = 100.000)', () => {
    expect(figuresFit(cycle, order('a', undefined, '5.400120', '100.000'), tolerance)).toBe(true);
    expect(figuresFit(cycle, order('a', undefined, '5.4001', '99.99'), tolerance)).toBe(true);
    // 0.5 % of 5.40012 is 0.0270006: 5.4271206 is the last price that fits.
    expect(figuresFit(cycle, order('a', undefined, '5.4271206'), tolerance)).toBe(true);
    expect(figuresFit(cycle, order('a', undefined, '5.4271207'), tolerance)).toBe(false);
    expect(figuresFit(cycle, order('a', undefined, '5.40012', '100.51'), tolerance)).toBe(false);
    expect(figuresFit(cycle, { ...order('a'), symbol: 'BTCBRL' }, tolerance)).toBe(false);
  });

  it('differences name each figure that is not exactly the quote’s', () => {
    expect(figureDifferences(cycle, order('a', 'QUOTE0001', '5.4001', '100.000'))).toEqual([
      { field: 'price', expected: '5.40012', got: '5.4001' },
    ]);
    expect(figureDifferences(cycle, order('a'))).toEqual([]);
  });
});
