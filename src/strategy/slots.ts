import { type CronSchedule, parseCron } from './cron-expression.js';
import { nextMatchingWall, previousMatchingWall } from './cron-walk.js';
import { instantOfWallTime, offsetAt, wallTimeOf } from './wall-clock.js';

/**
 * Slots: the instants at which a schedule is due. A slot is a wall-clock reading in the strategy's zone that
 * matches the cron schedule, turned into an instant by the rule of `wall-clock.ts`:
 * - clocks set back: each reading is a slot once, at its first occurrence. The repeated hour brings no
 *   second round (a schedule that must tick at an even pace through the night of the change should use
 *   timezone UTC);
 * - clocks set forward: a reading inside the gap is not lost; it is due at the first instant after the gap,
 *   and readings that land on the same instant are one slot. So a 02:30 daily slot on a spring-forward day
 *   runs once at 03:00, and a 15-minute schedule runs once at 03:00 for the whole skipped hour.
 */

type Schedule = string | CronSchedule;

/** A schedule that matches at all matches within this span (Feb 29 recurs within 8 years). */
const SEARCH_SPAN_MS = 8 * 366 * 86_400_000;
const SECOND_MS = 1000;
const SIX_HOURS_MS = 6 * 3_600_000;

function toCron(schedule: Schedule): CronSchedule {
  return typeof schedule === 'string' ? parseCron(schedule) : schedule;
}

/** The first slot strictly after the instant, or undefined when the schedule never matches again. */
export function nextSlotAfter(schedule: Schedule, timeZone: string, after: Date): Date | undefined {
  const slots = slotsFrom(toCron(schedule), timeZone, after.getTime());
  const first = slots.next();
  return first.done ? undefined : new Date(first.value);
}

/** Every slot in (afterExclusive, untilInclusive], in order. */
export function slotsBetween(
  schedule: Schedule,
  timeZone: string,
  afterExclusive: Date,
  untilInclusive: Date,
): Date[] {
  const until = untilInclusive.getTime();
  const result: Date[] = [];
  for (const slot of slotsFrom(toCron(schedule), timeZone, afterExclusive.getTime(), until)) {
    result.push(new Date(slot));
  }
  return result;
}

/**
 * Slots in (afterExclusive, untilInclusive], in order, produced one at a time: a caller that stops early (a
 * count with a cap) walks no further.
 */
export function* eachSlotBetween(
  schedule: Schedule,
  timeZone: string,
  afterExclusive: Date,
  untilInclusive: Date,
): Generator<number> {
  yield* slotsFrom(toCron(schedule), timeZone, afterExclusive.getTime(), untilInclusive.getTime());
}

/**
 * Slots after `after` in increasing order. Starting the walk at the reading of `after` is enough: that
 * reading's instant is at or before `after` and the reading-to-instant mapping never decreases.
 */
function* slotsFrom(cron: CronSchedule, timeZone: string, after: number, until = Number.POSITIVE_INFINITY) {
  const limit = wallTimeOf(Math.min(until, after + SEARCH_SPAN_MS), timeZone) + SIX_HOURS_MS;
  let last = after;
  let wall = nextMatchingWall(cron, Math.floor(wallTimeOf(after, timeZone) / SECOND_MS) * SECOND_MS, limit);
  while (wall !== undefined) {
    const instant = instantOfWallTime(wall, timeZone);
    if (instant > until) return;
    if (instant > last) {
      last = instant;
      yield instant;
    }
    wall = nextMatchingWall(cron, wall + SECOND_MS, limit);
  }
}

/** The latest slot at or before the instant, or undefined when there is none within the search span. */
export function latestSlotAtOrBefore(schedule: Schedule, timeZone: string, instant: Date): Date | undefined {
  const cron = toCron(schedule);
  const at = instant.getTime();
  // After clocks were set back, readings later than the current one may still belong to the past (their
  // first occurrence): start from the reading under the offset in force before the change.
  const highestOffset = Math.max(offsetAt(at, timeZone), offsetAt(at - SIX_HOURS_MS, timeZone));
  const limit = wallTimeOf(at - SEARCH_SPAN_MS, timeZone);
  let wall = previousMatchingWall(cron, at + highestOffset, limit);
  while (wall !== undefined) {
    const slot = instantOfWallTime(wall, timeZone);
    if (slot <= at) return new Date(slot);
    wall = previousMatchingWall(cron, wall - SECOND_MS, limit);
  }
  return undefined;
}
