import { describe, expect, it } from 'vitest';
import { Decimal } from '../../src/money.js';
import { compact, detached } from '../../src/strategy/kept-values.js';

describe('values kept for the worker’s life', () => {
  it('copies a decimal exactly, digits, scale and sign included', () => {
    for (const text of ['100.00', '-0.000000000000000001', '1000000000000.000000000000000001', '0']) {
      const kept = compact(new Decimal(text));
      expect(kept).toBeInstanceOf(Decimal);
      expect(kept.toFixed()).toBe(new Decimal(text).toFixed());
    }
  });

  it('copies text equal to the original, whatever it was cut from', () => {
    const file = `name: a-strategy-with-a-long-name\n${'#'.repeat(10_000)}`;
    const name = file.slice(6, file.indexOf('\n'));
    expect(detached(name)).toBe('a-strategy-with-a-long-name');
    expect(detached('São Paulo ✓')).toBe('São Paulo ✓');
  });
});
