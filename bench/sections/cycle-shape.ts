/**
 * What one real cycle did, in order: groups of SQL statements (a group = statements the driver had in
 * flight together), each with its text, parameters and answer, and HTTP calls. Derived from the statement
 * proxy's log and the timed client calls of a single cycle, so the floor replays the same work with the
 * same overlap.
 */
import type { TimedCall } from '../harness/bench-engine.js';
import type { StatementSeen } from '../harness/statement-counter.js';

export type HttpCall = 'balance' | 'quote' | 'order';

export type CycleStep = { sql: StatementSeen[] } | { http: HttpCall };

export interface CycleShape {
  steps: CycleStep[];
  statements: number;
  /** Exchanges with PostgreSQL (statement-counter.ts): equal to `statements` when each costs one. */
  exchanges: number;
}

export const CALL_OF_OPERATION: Record<TimedCall['operation'], HttpCall> = {
  getBalance: 'balance',
  getQuote: 'quote',
  createOrder: 'order',
};

export function deriveShape(
  statements: readonly StatementSeen[],
  exchanges: number,
  calls: readonly TimedCall[],
): CycleShape {
  type Timed = { at: number; statement?: StatementSeen; call?: HttpCall };
  const timeline: Timed[] = [
    ...statements.map((statement) => ({ at: statement.at, statement })),
    ...calls.map((call) => ({ at: call.startAt, call: CALL_OF_OPERATION[call.operation] })),
  ].sort((a, b) => a.at - b.at);

  const steps: CycleStep[] = [];
  for (const event of timeline) {
    if (event.call !== undefined) {
      steps.push({ http: event.call });
      continue;
    }
    const previous = steps.at(-1);
    if (event.statement!.overlapped && previous !== undefined && 'sql' in previous)
      previous.sql.push(event.statement!);
    else steps.push({ sql: [event.statement!] });
  }
  return { steps, statements: statements.length, exchanges };
}

/** "select×4 | balance | insert | quote | insert update update | order | begin insert insert commit update" */
export function describeShape(shape: CycleShape): string {
  return shape.steps.map((step) => ('http' in step ? `[${step.http}]` : groupText(step.sql))).join(' ');
}

function groupText(statements: readonly StatementSeen[]): string {
  const kinds = statements.map((statement) => statement.kind);
  return kinds.length > 1 ? `(${kinds.join('‖')})` : kinds[0]!;
}
