/**
 * Where in a cycle the worker spends more time than the floor: a cycle cut at the start and end of its HTTP
 * calls (balance, quote, order) into phases, each the median over the run, worker against floor. The phases
 * between calls are the database's (the claim before the first call, the snapshot and decision before the
 * quote, the intent between quote and order, the outcome after the order, with the cycle's log line and metrics),
 * the calls are the client's (the request, validation of the answer, the call's metrics).
 */
import type { HttpCall } from './cycle-shape.js';

/** One HTTP call of a cycle, in milliseconds since the cycle began. */
export interface CallSpan {
  call: HttpCall;
  startMs: number;
  endMs: number;
}

/** Phase name → milliseconds, for one cycle. */
export type Phases = Record<string, number>;

export function phasesOf(calls: readonly CallSpan[], wholeMs: number): Phases {
  const phases: Phases = {};
  let previous: HttpCall | 'start' = 'start';
  let at = 0;
  for (const span of calls) {
    phases[previous === 'start' ? `before ${span.call}` : `${previous} > ${span.call}`] = span.startMs - at;
    phases[span.call] = span.endMs - span.startMs;
    previous = span.call;
    at = span.endMs;
  }
  phases[previous === 'start' ? 'whole' : `after ${previous}`] = wholeMs - at;
  return phases;
}

/** The median of each phase over cycles of one shape (a phase some cycles lack is left out). */
export function medianPhases(samples: readonly Phases[]): Phases {
  const first = samples[0];
  if (!first) return {};
  const medians: Phases = {};
  for (const name of Object.keys(first)) {
    const values = samples.map((phases) => phases[name]).filter((value) => value !== undefined);
    if (values.length !== samples.length) continue;
    values.sort((a, b) => a - b);
    medians[name] = values[values.length >> 1]!;
  }
  return medians;
}

/** One line per phase: the worker's median, the floor's, and the worker's excess over it. */
export function phaseLines(worker: Phases, floor: Phases): { phase: string; text: string }[] {
  return Object.entries(worker).map(([phase, ms]) => {
    const floorMs = floor[phase];
    const text =
      floorMs === undefined
        ? `${ms.toFixed(2)} ms`
        : `${ms.toFixed(2)} ms / ${floorMs.toFixed(2)} ms (${signed(ms - floorMs)})`;
    return { phase, text };
  });
}

function signed(ms: number): string {
  return `${ms >= 0 ? '+' : '−'}${Math.abs(ms).toFixed(2)}`;
}
