/**
 * The report's time frame: `--from` and `--to` read in a time zone, and the day, week or month periods
 * between them. Every period is half-open, [start, end): an order placed exactly at local midnight belongs
 * to the day that begins then. Days follow the zone's clock, so a day around a DST change lasts 23 or 25
 * hours; weeks start on Monday (ISO 8601).
 */
import { instantOfWallTime, isKnownTimeZone, wallTimeOf } from '../strategy/wall-clock.js';

export const GROUPINGS = ['day', 'week', 'month', 'strategy'] as const;
export type Grouping = (typeof GROUPINGS)[number];

export interface Period {
  start: Date;
  end: Date;
}

/** A period with the label a person reads: the local date it starts on (`2026-03-08`, `2026-03`). */
export interface LabelledPeriod extends Period {
  label: string;
}

export class ReportArgumentError extends Error {
  override readonly name = 'ReportArgumentError';
  readonly code = 'INVALID_ARGUMENT';
}

const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
/** A date-time with an explicit offset or Z: an instant that needs no zone. */
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;
/** A date-time without an offset: a reading of the report's zone. */
const LOCAL_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/;

export function checkTimeZone(option: string, zone: string): string {
  if (isKnownTimeZone(zone)) return zone;
  throw new ReportArgumentError(
    `${option} must be an IANA time zone such as UTC or America/Sao_Paulo (got ${JSON.stringify(zone)})`,
  );
}

/**
 * `2026-03-01` is local midnight of that day in the zone; `2026-03-01T09:30` a local reading;
 * `2026-03-01T12:00:00Z` or `...-03:00` an instant as written.
 */
export function parseReportInstant(option: string, value: string, timeZone: string): Date {
  const fail = () =>
    new ReportArgumentError(
      `${option} must be a date (2026-03-01), a local date-time (2026-03-01T09:30) or an ISO 8601 instant (2026-03-01T12:00:00Z) (got ${JSON.stringify(value)})`,
    );
  const date = DATE_ONLY.exec(value);
  const local = LOCAL_DATE_TIME.exec(value);
  const parts = date ?? local;
  if (parts) {
    const [year, month, day, hour, minute, second] = parts.slice(1).map((part) => Number(part ?? 0));
    const wall = Date.UTC(year!, month! - 1, day!, hour ?? 0, minute ?? 0, second ?? 0);
    const back = new Date(wall);
    // Date.UTC rolls 2026-02-30 over to March; a date that does not exist is a typo.
    if (back.getUTCMonth() !== month! - 1 || back.getUTCDate() !== day! || hour! > 23 || minute! > 59) {
      throw fail();
    }
    return new Date(instantOfWallTime(wall, timeZone));
  }
  if (DATE_TIME.test(value)) {
    const instant = new Date(value);
    if (!Number.isNaN(instant.getTime())) return instant;
  }
  throw fail();
}

export function checkPeriod(from: Date, to: Date): Period {
  if (from.getTime() >= to.getTime()) {
    throw new ReportArgumentError(
      `--from must be before --to (got ${from.toISOString()} and ${to.toISOString()}; --to is exclusive)`,
    );
  }
  return { start: from, end: to };
}

/** At most this many periods in one report: 30 years of days. */
const MAX_PERIODS = 11_000;

/**
 * The periods of the grouping that cover [start, end), cut at start and end: a report from the 10th to the
 * 20th by month has one period, from the 10th to the 20th. `strategy` is one period, the whole range.
 */
export function periodsOf(range: Period, grouping: Grouping, timeZone: string): LabelledPeriod[] {
  if (grouping === 'strategy') return [{ ...range, label: `${labelOf(range.start, timeZone, 'day')}..` }];
  const periods: LabelledPeriod[] = [];
  let start = range.start;
  while (start < range.end) {
    const next = new Date(Math.min(nextBoundary(start, grouping, timeZone).getTime(), range.end.getTime()));
    periods.push({ start, end: next, label: labelOf(start, timeZone, grouping) });
    if (periods.length > MAX_PERIODS) {
      throw new ReportArgumentError(`the range holds more than ${MAX_PERIODS} periods: choose a wider --by`);
    }
    start = next;
  }
  return periods;
}

/** The first local midnight of a new day, Monday or first of a month after the instant. */
function nextBoundary(instant: Date, grouping: 'day' | 'week' | 'month', timeZone: string): Date {
  const wall = new Date(wallTimeOf(instant.getTime(), timeZone));
  const year = wall.getUTCFullYear();
  const month = wall.getUTCMonth();
  const day = wall.getUTCDate();
  let next: number;
  if (grouping === 'day') next = Date.UTC(year, month, day + 1);
  else if (grouping === 'month') next = Date.UTC(year, month + 1, 1);
  else next = Date.UTC(year, month, day + 7 - ((wall.getUTCDay() + 6) % 7));
  return new Date(instantOfWallTime(next, timeZone));
}

function labelOf(instant: Date, timeZone: string, grouping: 'day' | 'week' | 'month'): string {
  const wall = new Date(wallTimeOf(instant.getTime(), timeZone)).toISOString();
  return grouping === 'month' ? wall.slice(0, 7) : wall.slice(0, 10);
}

/** A boundary as people read it in the report's zone: `2026-03-08 00:00 (2026-03-08T05:00:00.000Z)`. */
export function describeInstant(instant: Date, timeZone: string): string {
  const wall = new Date(wallTimeOf(instant.getTime(), timeZone)).toISOString();
  return `${wall.slice(0, 10)} ${wall.slice(11, 16)} ${timeZone} (${instant.toISOString()})`;
}
