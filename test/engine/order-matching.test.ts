import { describe, expect, it } from 'vitest';
import { matchOrders } from '../../src/engine/index.js';
import { d } from './support/harness.js';

const cycle = { quoteId: 'QUOTE0001', amount: d('100'), price: d('5.4001') };
const order = (id: string, quoteId?: string, price = '5.4001', amount = '100.00') => ({
  id,
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
    ['a single order without quoteId and the same figures', [order('a')], { kind: 'single', orderId: 'a' }],
    ['figures differ: price', [order('a', 'QUOTE0001', '5.4002')], { kind: 'none' }],
    ['figures differ: amount', [order('a', 'QUOTE0001', '5.4001', '100.01')], { kind: 'none' }],
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

  it('compares decimals by value, not by text (100 = 100.00)', () => {
    expect(matchOrders(cycle, [order('a', undefined, '5.40010', '100.000')])).toEqual({
      kind: 'single',
      orderId: 'a',
    });
  });
});
