import { describe, expect, it } from 'vitest';
import { CYCLE_STATES, type CycleState, isFinalState, isLegalTransition } from '../../src/db/index.js';

// The moves the issue allows, written out independently of the implementation's table.
const ALLOWED = new Set([
  'claimed>quoted',
  'claimed>skipped',
  'claimed>failed',
  'quoted>submitting',
  'quoted>skipped',
  'quoted>failed',
  'quoted>dry_run',
  'submitting>placed',
  'submitting>failed',
  'submitting>unsure',
  'submitting>quoted',
  'unsure>placed',
  'unsure>not_placed',
]);

describe('cycle state machine', () => {
  it('allows exactly the listed moves among all 81 pairs', () => {
    const allowed: string[] = [];
    for (const from of CYCLE_STATES) {
      for (const to of CYCLE_STATES) if (isLegalTransition(from, to)) allowed.push(`${from}>${to}`);
    }
    expect(allowed.sort()).toEqual([...ALLOWED].sort());
  });

  it('treats every state without a way out as final', () => {
    const final = CYCLE_STATES.filter((state: CycleState) => isFinalState(state));
    expect(final.sort()).toEqual(['dry_run', 'failed', 'not_placed', 'placed', 'skipped']);
  });
});
