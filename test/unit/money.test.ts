import { describe, expect, it } from 'vitest';
import {
  Decimal,
  decimalFromWireNumber,
  formatMoney,
  MoneyFormatError,
  parseDecimal,
  toDecimalText,
} from '../../src/money.js';

describe('parseDecimal', () => {
  it.each([
    '0',
    '5',
    '-0.5',
    '5.4321',
    '2500.00',
    '0.000000000000000001',
    '123456789012345678901234.123456789',
  ])('accepts %j exactly', (text) => {
    const value = parseDecimal(text, 'price');
    expect(value.equals(new Decimal(text))).toBe(true);
  });

  it.each([
    ['', 'price'],
    ['1,5', 'price'],
    [' 5', 'price'],
    ['5 ', 'price'],
    ['NaN', 'price'],
    ['Infinity', 'price'],
    ['-Infinity', 'price'],
    ['1e3', 'price'],
    ['1E-2', 'price'],
    ['+5', 'price'],
    ['.5', 'price'],
    ['5.', 'price'],
    ['0x10', 'price'],
  ])('rejects %j naming the field', (text, field) => {
    expect(() => parseDecimal(text, field)).toThrow(MoneyFormatError);
    expect(() => parseDecimal(text, field)).toThrow(/^price: expected decimal text/);
  });

  it('rejects non-strings with the field and the value kind', () => {
    expect(() => parseDecimal(5, 'quote.price')).toThrow('quote.price: expected decimal text (got 5)');
    expect(() => parseDecimal(null, 'amount')).toThrow('amount: expected decimal text (got null)');
  });
});

describe('decimalFromWireNumber', () => {
  it('keeps what the sender wrote for ordinary amounts', () => {
    expect(toDecimalText(decimalFromWireNumber(2500.1, 'amount'))).toBe('2500.1');
    expect(toDecimalText(decimalFromWireNumber(0.1, 'amount'))).toBe('0.1');
    expect(toDecimalText(decimalFromWireNumber('461.23', 'amount'))).toBe('461.23');
  });

  it.each([Number.NaN, Number.POSITIVE_INFINITY, '1e5', true])('rejects %j', (value) => {
    expect(() => decimalFromWireNumber(value, 'amount')).toThrow(/^amount: /);
  });
});

describe('formatMoney', () => {
  it.each([
    ['2.345', 2, 'halfUp', '2.35'],
    ['2.345', 2, 'halfEven', '2.34'],
    ['2.355', 2, 'halfEven', '2.36'],
    ['2.349', 2, 'down', '2.34'],
    ['2.341', 2, 'up', '2.35'],
    ['-2.345', 2, 'halfUp', '-2.35'],
    ['-2.349', 2, 'down', '-2.34'],
    ['5', 4, 'halfEven', '5.0000'],
  ] as const)('%s at scale %i rounding %s is %s', (text, scale, rounding, expected) => {
    expect(formatMoney(new Decimal(text), scale, rounding)).toBe(expected);
  });

  it('refuses a negative or fractional scale', () => {
    expect(() => formatMoney(new Decimal(1), -1, 'down')).toThrow(RangeError);
    expect(() => formatMoney(new Decimal(1), 1.5, 'down')).toThrow(RangeError);
  });
});

describe('toDecimalText', () => {
  it('never uses exponent notation', () => {
    expect(toDecimalText(new Decimal('0.000000000000000000000000000001'))).toBe(
      '0.000000000000000000000000000001',
    );
    expect(toDecimalText(new Decimal('1000000000000000000000000000000'))).toBe(
      '1000000000000000000000000000000',
    );
  });

  it('keeps 18 fractional digits through arithmetic', () => {
    const sum = parseDecimal('0.100000000000000001', 'a').plus(parseDecimal('0.200000000000000002', 'b'));
    expect(toDecimalText(sum)).toBe('0.300000000000000003');
  });

  it('refuses non-finite values', () => {
    expect(() => toDecimalText(new Decimal(Number.NaN))).toThrow(RangeError);
    expect(() => toDecimalText(new Decimal(1).div(0))).toThrow(RangeError);
  });
});
