/**
 * This process's metrics as the alert rules read them, for the console's "firing now" panel, which must not
 * ask Prometheus. Gauges are read as they are. Counters need history (increase() and rate() compare two
 * readings): a periodic task takes a reading every SAMPLE_MS and keeps those of the longest look-back an
 * alert needs. A counter starts at zero with the process, so an instant before the first reading reads 0.
 */
import { ALERT_RULES, EVENT_WINDOW_MS, RATE_WINDOW_MS } from './alert-rules.js';
import type { Metrics } from './metrics.js';

/** One reading per this many milliseconds: a quarter of Prometheus' default scrape is plenty for minutes-long windows. */
export const SAMPLE_MS = 15_000;

/** The counters some alert reads, each summed by the label that alert keeps ('' for a plain sum). */
const COUNTERS = {
  apiErrors: { metric: 'apiErrors', by: 'code' },
  databaseErrors: { metric: 'databaseErrors', by: '' },
  databaseTimeouts: { metric: 'databaseTimeouts', by: '' },
  internalErrors: { metric: 'internalErrors', by: 'where' },
  notificationsDead: { metric: 'notificationsDead', by: 'channel' },
} as const satisfies Record<string, { metric: keyof Metrics; by: string }>;

export type CounterName = keyof typeof COUNTERS;

type Reading = { at: number; values: Record<CounterName, Map<string, number>> };

/** The longest an alert looks back: a rate's window held for the rule's `for`, or an event window. */
const KEEP_MS = Math.max(
  EVENT_WINDOW_MS,
  RATE_WINDOW_MS + ALERT_RULES.apiErrors.forMs,
  RATE_WINDOW_MS + ALERT_RULES.databaseErrors.forMs,
  RATE_WINDOW_MS + ALERT_RULES.databaseTimeouts.forMs,
);

export interface ProcessFacts {
  /** When this process started counting (the counters' zero). */
  readonly startedAt: Date;
  /** Takes a reading (the periodic task's run). */
  sample(): Promise<void>;
  /** Each label value's counter at the instant (the last reading at or before it). */
  counterAt(name: CounterName, at: Date): Map<string, number>;
  /** The instants of the readings within [from, now], oldest first: where a `for` is checked. */
  readingsSince(from: Date): Date[];
  /** Each label value of a gauge, as set now (one entry under '' for a gauge without labels). */
  gauge(
    metric:
      | 'lastSuccessfulCycle'
      | 'strategyInterval'
      | 'approvalsWaitingLong'
      | 'databaseClockSkew'
      | 'targetBehind'
      | 'targetWindowLeft',
    label?: 'strategy',
  ): Promise<Map<string, number>>;
}

export function createProcessFacts(metrics: Metrics, clock: () => Date): ProcessFacts {
  const startedAt = clock();
  const readings: Reading[] = [];

  async function sumsOf(name: CounterName): Promise<Map<string, number>> {
    const { metric, by } = COUNTERS[name];
    const sums = new Map<string, number>();
    for (const { labels, value } of (await metrics[metric].get()).values) {
      const key = by === '' ? '' : String((labels as Record<string, unknown>)[by] ?? '');
      sums.set(key, (sums.get(key) ?? 0) + value);
    }
    return sums;
  }

  return {
    startedAt,
    async sample() {
      const at = clock().getTime();
      const values = {} as Reading['values'];
      for (const name of Object.keys(COUNTERS) as CounterName[]) values[name] = await sumsOf(name);
      readings.push({ at, values });
      while (readings.length > 0 && readings[0]!.at < at - KEEP_MS - SAMPLE_MS) readings.shift();
    },
    counterAt(name, at) {
      let found: Reading | undefined;
      for (const reading of readings) {
        if (reading.at > at.getTime()) break;
        found = reading;
      }
      return found?.values[name] ?? new Map();
    },
    readingsSince(from) {
      return readings
        .filter((reading) => reading.at >= from.getTime())
        .map((reading) => new Date(reading.at));
    },
    async gauge(metric, label) {
      const values = new Map<string, number>();
      for (const entry of (await metrics[metric].get()).values) {
        const labels = entry.labels as Record<string, unknown>;
        values.set(label === undefined ? '' : String(labels[label] ?? ''), entry.value);
      }
      return values;
    },
  };
}
