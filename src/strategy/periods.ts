import { instantOfWallTime, wallTimeOf } from './wall-clock.js';

/**
 * Budget periods: the calendar day and month in the strategy's zone that contain an instant, as half-open
 * UTC ranges [start, end). A day is not always 24 hours (23 or 25 around a DST change), and where a zone
 * skips midnight itself, the day starts at the first instant after the gap.
 */

export interface Period {
  start: Date;
  end: Date;
}

export interface BudgetPeriods {
  day: Period;
  month: Period;
}

export function budgetPeriods(timeZone: string, instant: Date): BudgetPeriods {
  const wall = new Date(wallTimeOf(instant.getTime(), timeZone));
  const year = wall.getUTCFullYear();
  const month = wall.getUTCMonth();
  const day = wall.getUTCDate();
  const at = (wallTime: number) => new Date(instantOfWallTime(wallTime, timeZone));
  return {
    day: { start: at(Date.UTC(year, month, day)), end: at(Date.UTC(year, month, day + 1)) },
    month: { start: at(Date.UTC(year, month, 1)), end: at(Date.UTC(year, month + 1, 1)) },
  };
}
