import { describe, expect, it } from 'vitest';
import { JsonNumberTooLongError, parseJsonExactly } from '../../src/api/exact-json.js';

describe('parseJsonExactly', () => {
  it.each([
    ['{"amount":2500.5,"count":20}', { amount: 2500.5, count: 20 }],
    ['[0.1, -0.5, 1e3, 123456789012345]', [0.1, -0.5, 1000, 123456789012345]],
    ['[0.00000000000000001, 1.0000000000000000]', [1e-17, 1]],
    ['[9007199254740992]', [9007199254740992]],
  ])('keeps numbers a double holds as numbers: %s', (text, value) => {
    expect(parseJsonExactly(text)).toEqual(value);
  });

  it.each([
    ['[9007199254740993]', ['9007199254740993']],
    ['{"a":-1234567890.123456789}', { a: '-1234567890.123456789' }],
    ['[1e-400, 1e400, 1.00000000000000001e2]', ['1e-400', '1e400', '1.00000000000000001e2']],
  ])('hands on numbers a double would round as their own text: %s', (text, value) => {
    expect(parseJsonExactly(text)).toEqual(value);
  });

  it('never changes strings, however many digits or exponent marks they hold', () => {
    const text = '{"tx":"9e5d1234567890123456789e1","quote":"say \\"12345678901234567890\\""}';
    expect(parseJsonExactly(text)).toEqual(JSON.parse(text));
  });

  it.each(['{"a": 01234567890123456789}', '{"a": 12345678901234567890', '[1.]'])(
    'leaves invalid JSON invalid: %s',
    (text) => {
      expect(() => parseJsonExactly(text)).toThrow(SyntaxError);
    },
  );

  it('refuses a number literal of more than 40 digits, exponent included, and reads one of 40', () => {
    const forty = '1234567890123456789012345678901234567890';
    expect(parseJsonExactly(`{"a":${forty}}`)).toEqual({ a: forty });
    for (const text of [`{"a":${forty}0}`, `[0.1${'0'.repeat(80_000)}1]`, `[1e${'0'.repeat(40)}]`]) {
      expect(() => parseJsonExactly(text)).toThrow(JsonNumberTooLongError);
    }
  });
});
