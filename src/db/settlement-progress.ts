import type { Decimal } from '../money.js';
import { toJson } from './json.js';
import type { JsonValue, SettlementStatus, TrackingSnapshot } from './types.js';

/**
 * Settlement only moves forward: pending → partial → paid → withdrawn → settled. A poll may skip steps
 * (it sees the latest state only), so a forward jump is normal; a move backwards is an anomaly worth a
 * human look, and the recorded status is not moved back by it.
 */
const RANK: Readonly<Record<SettlementStatus, number>> = {
  pending: 0,
  partial: 1,
  paid: 2,
  withdrawn: 3,
  settled: 4,
};

export interface SettlementAmounts {
  expectedAmount: Decimal | null;
  receivedAmount: Decimal | null;
  withdrawnAmount: Decimal | null;
}

/** What the order last knew: its state, plus the withdrawal details of the last report (as stored). */
export type KnownSettlement = { status: SettlementStatus; withdrawal: JsonValue } & SettlementAmounts;

export interface SettlementStep {
  /** The status the order keeps after this report. */
  status: SettlementStatus;
  /** Anything changed (status, an amount or the withdrawal details): worth a history row, and progress. */
  changed: boolean;
  anomaly: string | null;
}

export function assessTracking(current: KnownSettlement, reported: TrackingSnapshot): SettlementStep {
  const anomalies: string[] = [];
  const wentBack = RANK[reported.status] < RANK[current.status];
  if (wentBack) anomalies.push(`status went back from ${current.status} to ${reported.status}`);
  for (const field of ['receivedAmount', 'withdrawnAmount'] as const) {
    const before = current[field];
    const now = reported[field];
    if (before && now?.lt(before)) {
      anomalies.push(`${field} decreased from ${before.toFixed()} to ${now.toFixed()}`);
    }
  }
  const changed =
    reported.status !== current.status ||
    !sameAmount(current.expectedAmount, reported.expectedAmount) ||
    !sameAmount(current.receivedAmount, reported.receivedAmount) ||
    !sameAmount(current.withdrawnAmount, reported.withdrawnAmount) ||
    !sameJson(current.withdrawal, toJson(reported.withdrawal));
  return {
    status: wentBack ? current.status : reported.status,
    changed,
    anomaly: anomalies.length > 0 ? anomalies.join('; ') : null,
  };
}

function sameAmount(a: Decimal | null, b: Decimal | null): boolean {
  if (a === null || b === null) return a === b;
  return a.eq(b);
}

/** Deep equality of JSON values; key order is ignored because jsonb does not keep it. */
export function sameJson(a: JsonValue, b: JsonValue): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((item, index) => sameJson(item, b[index] as JsonValue));
  }
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((key) => key in b && sameJson(a[key] as JsonValue, b[key] as JsonValue));
}
