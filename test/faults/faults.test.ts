/**
 * The short fault profile, inside `npm test`: worker replicas SIGKILLed and restarted, every kind of
 * sandbox fault, database sessions terminated; then every invariant is audited (see suite/audit.ts). The
 * long profile is `npm run test:faults`. Needs a PostgreSQL server; on a PGlite-only run it is skipped
 * with a loud message.
 */
import { describe, expect, inject, it } from 'vitest';
import { FAULT_KINDS } from './suite/chaos.js';
import { formatFigures } from './suite/figures.js';
import { SHORT_PROFILE } from './suite/profiles.js';
import { runFaultSuite } from './suite/run-suite.js';

const context = inject('treasuryDatabase');
if (context.backend !== 'postgres') {
  process.stderr.write(
    `\n${'!'.repeat(78)}\n!!  FAULT SUITE SKIPPED: it needs a PostgreSQL server (replicas, pg_terminate_backend)\n${'!'.repeat(78)}\n\n`,
  );
}

describe.skipIf(context.backend !== 'postgres')('worker replicas under faults (short profile)', () => {
  it('keeps every invariant through kills, service faults and terminated database sessions', {
    timeout: 120_000,
  }, async () => {
    const figures = await runFaultSuite(SHORT_PROFILE, { adminUrl: context.adminUrl });
    console.log(formatFigures(figures));

    // The run must have been hostile, or passing proves nothing.
    expect(figures.kills).toBeGreaterThan(0);
    for (const kind of FAULT_KINDS) expect(figures.faultWindows[kind], kind).toBeGreaterThan(0);
    expect(figures.backendsTerminated).toBeGreaterThan(0);
    expect(figures.ordersAtSandbox).toBeGreaterThan(0);

    expect(figures.violations).toEqual([]);
    expect(figures.duplicateOrders).toBe(0);
    expect(figures.unreconciledCycles).toBe(0);
    expect(figures.ordersRecorded).toBeGreaterThanOrEqual(figures.ordersAtSandbox);
  });
});
