/**
 * Conversions between instants and wall-clock readings in an IANA time zone, using the ICU data built into
 * Node (Intl). A wall-clock reading is carried as "wall milliseconds": the reading encoded as if it were UTC.
 *
 * The rule for readings the clock skips or repeats, which every schedule and budget period follows:
 * - a reading that occurs twice (clocks set back) means its FIRST occurrence;
 * - a reading that never occurs (clocks set forward) means the first instant after the gap, i.e. the
 *   moment of the transition (02:30 on a spring-forward night in New York is 03:00 EDT, 07:00Z).
 * The mapping from readings to instants is therefore non-decreasing, which the slot search relies on.
 */
import { detached } from './kept-values.js';

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
const SECOND_MS = 1000;

const formatters = new Map<string, Intl.DateTimeFormat>();

/** True when Intl knows the zone name (IANA names such as "America/Sao_Paulo", and "UTC"). */
export function isKnownTimeZone(timeZone: string): boolean {
  try {
    formatterFor(timeZone);
    return true;
  } catch {
    return false;
  }
}

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(detached(timeZone), formatter);
  }
  return formatter;
}

/** UTC offset in milliseconds in force at the instant (wall = instant + offset), read from ICU. */
function readOffset(instant: number, timeZone: string): number {
  const whole = Math.floor(instant / SECOND_MS) * SECOND_MS;
  const parts: Record<string, number> = {};
  for (const part of formatterFor(timeZone).formatToParts(whole)) {
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  }
  const wall = Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!);
  return wall - whole;
}

/**
 * ICU lookups cost microseconds each and a week of 10-second slots needs tens of thousands of them, so an
 * offset is memoized per UTC day (and, near a transition, per hour) when it is the same one span before
 * and one span after. This assumes no zone has two transitions within three days, as the Temporal polyfill
 * does.
 */
const steadyOffsets = new Map<
  string,
  { [DAY_MS]: Map<number, number | null>; [HOUR_MS]: Map<number, number | null> }
>();

function steadyOffset(index: number, span: typeof DAY_MS | typeof HOUR_MS, timeZone: string): number | null {
  // Maps per zone and span keyed by the span's index: building a string key cost more than the lookup, at
  // every slot of a backtest.
  let zoneOffsets = steadyOffsets.get(timeZone);
  if (zoneOffsets === undefined) {
    zoneOffsets = { [DAY_MS]: new Map(), [HOUR_MS]: new Map() };
    steadyOffsets.set(detached(timeZone), zoneOffsets);
  }
  const offsets = zoneOffsets[span];
  let offset = offsets.get(index);
  if (offset === undefined) {
    const before = readOffset((index - 1) * span, timeZone);
    const after = readOffset((index + 2) * span - SECOND_MS, timeZone);
    offset = before === after ? before : null;
    if (offsets.size > 50_000) offsets.clear();
    offsets.set(index, offset);
  }
  return offset;
}

export function offsetAt(instant: number, timeZone: string): number {
  return (
    steadyOffset(Math.floor(instant / DAY_MS), DAY_MS, timeZone) ??
    steadyOffset(Math.floor(instant / HOUR_MS), HOUR_MS, timeZone) ??
    readOffset(instant, timeZone)
  );
}

/** The wall-clock reading at the instant, in wall milliseconds. */
export function wallTimeOf(instant: number, timeZone: string): number {
  return instant + offsetAt(instant, timeZone);
}

/** The instant a wall-clock reading stands for, by the rule in this module's header. */
export function instantOfWallTime(wall: number, timeZone: string): number {
  // Any instant showing this reading lies within a day of it, so a day with one offset settles it.
  const steady = steadyOffset(Math.floor(wall / DAY_MS), DAY_MS, timeZone);
  if (steady !== null) return wall - steady;
  const offsetBefore = offsetAt(wall - DAY_MS, timeZone);
  const offsetAfter = offsetAt(wall + DAY_MS, timeZone);
  const candidates = [wall - offsetBefore, wall - offsetAfter]
    .filter((instant) => offsetAt(instant, timeZone) === wall - instant)
    .sort((a, b) => a - b);
  if (candidates[0] !== undefined) return candidates[0];
  return findTransition(wall - offsetAfter, wall - offsetBefore, offsetAfter, timeZone);
}

/**
 * Binary search for the first instant in (low, high] whose offset is `offsetAfter`: the moment the clock
 * jumped over the reading. Whole seconds suffice, as no zone transitions in the middle of a second.
 */
function findTransition(low: number, high: number, offsetAfter: number, timeZone: string): number {
  let lo = Math.min(low, high);
  let hi = Math.max(low, high);
  while (hi - lo > SECOND_MS) {
    const middle = lo + Math.floor((hi - lo) / 2 / SECOND_MS) * SECOND_MS;
    if (readOffset(middle, timeZone) === offsetAfter) hi = middle;
    else lo = middle;
  }
  return hi;
}

const WALL_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?(Z|[+-]\d{2}:\d{2})?$/;

/**
 * The instant of a written date and time, "2026-12-05T17:00" (a reading in the zone, by this module's rule)
 * or with its own offset, "2026-12-05T17:00-03:00" or "…Z"; undefined when the text is not one or names no
 * real date ("2026-02-30T10:00").
 */
export function instantOfDateTimeText(text: string, timeZone: string): number | undefined {
  const match = WALL_DATE_TIME.exec(text);
  if (!match) return undefined;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map((part) => Number(part ?? 0)) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const wall = Date.UTC(year, month - 1, day, hour, minute, second);
  const reading = new Date(wall);
  const real =
    reading.getUTCFullYear() === year &&
    reading.getUTCMonth() === month - 1 &&
    reading.getUTCDate() === day &&
    hour < 24 &&
    minute < 60 &&
    second < 60;
  if (!real) return undefined;
  const offset = match[7];
  if (offset === undefined) return instantOfWallTime(wall, timeZone);
  if (offset === 'Z') return wall;
  const sign = offset.startsWith('-') ? -1 : 1;
  const offsetHours = Number(offset.slice(1, 3));
  const offsetMinutes = Number(offset.slice(4, 6));
  // Offsets in use run from -12:00 to +14:00: a larger one is a typo that would move the instant by days.
  if (offsetHours > 14 || offsetMinutes >= 60) return undefined;
  const minutes = offsetHours * 60 + offsetMinutes;
  return wall - sign * minutes * 60_000;
}

/** The reading of an instant in the zone as a strategy file writes it: "2026-12-05T17:00" (or "…:30" seconds). */
export function dateTimeTextOf(instant: Date, timeZone: string): string {
  const text = new Date(wallTimeOf(instant.getTime(), timeZone)).toISOString();
  return text.slice(17, 19) === '00' ? text.slice(0, 16) : text.slice(0, 19);
}
