import { describe, expect, it } from 'vitest';
import { Decimal } from '../../src/money.js';
import { checkApprovedMaxPrice, defaultApprovedMaxPrice, needsApproval } from '../../src/strategy/index.js';
import { TraceLog } from '../../src/strategy/rule-result.js';
import { dca } from './strategy-builders.js';

const d = (text: string) => new Decimal(text);
const approval = (required: 'never' | 'always' | 'above', above?: string) => ({
  required,
  ...(above === undefined ? {} : { above: d(above) }),
  approvers: 2,
  timeoutMs: 3_600_000,
  priceTolerancePct: d('0.5'),
});

describe('approval rules', () => {
  it('needs approval by the rule: never, always, or strictly above the limit', () => {
    expect(needsApproval(dca(), d('1000000'))).toBe(false);
    expect(needsApproval(dca({ approval: approval('never') }), d('1000000'))).toBe(false);
    expect(needsApproval(dca({ approval: approval('always') }), d('0.01'))).toBe(true);
    const above = dca({ approval: approval('above', '50000.00') });
    expect(needsApproval(above, d('50000.00'))).toBe(false);
    expect(needsApproval(above, d('50000.01'))).toBe(true);
  });

  it('defaults the approved maximum to the parked price plus the tolerance, rounded down to 4 decimals', () => {
    // 5.4321 × 1.005 = 5.4592605: down to 5.4592, never up to 5.4593.
    expect(defaultApprovedMaxPrice(d('5.4321'), d('0.5')).toString()).toBe('5.4592');
    expect(defaultApprovedMaxPrice(d('5.4000'), d('0')).toString()).toBe('5.4');
    expect(defaultApprovedMaxPrice(d('5.3999'), d('1')).toString()).toBe('5.4538');
  });

  it('passes a fresh price at the approved maximum and fails one above it', () => {
    const atMaximum = new TraceLog();
    checkApprovedMaxPrice(atMaximum, d('5.4592'), d('5.4592'));
    expect(atMaximum.decision()).toMatchObject({ action: 'place', reason: 'ok' });
    const above = new TraceLog();
    checkApprovedMaxPrice(above, d('5.4593'), d('5.4592'));
    expect(above.decision()).toMatchObject({
      action: 'skip',
      reason: 'price_above_approved_max',
      trace: [
        {
          rule: 'approved_max_price',
          passed: false,
          reason: 'price_above_approved_max',
          detail: { price: '5.4593', approvedMaxPrice: '5.4592' },
        },
      ],
    });
  });
});
