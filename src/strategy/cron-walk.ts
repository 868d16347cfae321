import type { CronSchedule } from './cron-expression.js';

/**
 * Walks the naive calendar (wall-clock time encoded as if it were UTC milliseconds) to the next or previous
 * time a cron schedule matches. Time zones play no part here: the walk is over wall-clock readings, and
 * `wall-clock.ts` turns a reading into an instant. Fields are skipped a whole unit at a time (a month, a day,
 * an hour) so that a search over years stays cheap.
 */

const SECOND_MS = 1000;

/** Smallest matching wall time at or after `from` and not after `limit`, or undefined. */
export function nextMatchingWall(cron: CronSchedule, from: number, limit: number): number | undefined {
  let wall = Math.ceil(from / SECOND_MS) * SECOND_MS;
  while (wall <= limit) {
    const at = calendarOf(wall);
    const { year, month, day, hour, minute } = at;
    if (!cron.months.has(month + 1)) {
      wall = Date.UTC(year, month + 1, 1);
      continue;
    }
    if (!matchesDay(cron, at)) {
      wall = Date.UTC(year, month, day + 1);
      continue;
    }
    const nextHour = firstAtOrAfter(cron.hours, hour);
    if (nextHour === undefined) {
      wall = Date.UTC(year, month, day + 1);
      continue;
    }
    if (nextHour > hour) {
      wall = Date.UTC(year, month, day, nextHour);
      continue;
    }
    const nextMinute = firstAtOrAfter(cron.minutes, minute);
    if (nextMinute === undefined) {
      wall = Date.UTC(year, month, day, hour + 1);
      continue;
    }
    if (nextMinute > minute) {
      wall = Date.UTC(year, month, day, hour, nextMinute);
      continue;
    }
    const nextSecond = firstAtOrAfter(cron.seconds, at.second);
    if (nextSecond === undefined) {
      wall = Date.UTC(year, month, day, hour, minute + 1);
      continue;
    }
    return Date.UTC(year, month, day, hour, minute, nextSecond);
  }
  return undefined;
}

/** Largest matching wall time at or before `from` and not before `limit`, or undefined. */
export function previousMatchingWall(cron: CronSchedule, from: number, limit: number): number | undefined {
  let wall = Math.floor(from / SECOND_MS) * SECOND_MS;
  while (wall >= limit) {
    const at = calendarOf(wall);
    const { year, month, day, hour, minute } = at;
    if (!cron.months.has(month + 1)) {
      wall = Date.UTC(year, month, 1) - SECOND_MS;
      continue;
    }
    if (!matchesDay(cron, at)) {
      wall = Date.UTC(year, month, day) - SECOND_MS;
      continue;
    }
    const previousHour = lastAtOrBefore(cron.hours, hour);
    if (previousHour === undefined) {
      wall = Date.UTC(year, month, day) - SECOND_MS;
      continue;
    }
    if (previousHour < hour) {
      wall = Date.UTC(year, month, day, previousHour, 59, 59);
      continue;
    }
    const previousMinute = lastAtOrBefore(cron.minutes, minute);
    if (previousMinute === undefined) {
      wall = Date.UTC(year, month, day, hour) - SECOND_MS;
      continue;
    }
    if (previousMinute < minute) {
      wall = Date.UTC(year, month, day, hour, previousMinute, 59);
      continue;
    }
    const previousSecond = lastAtOrBefore(cron.seconds, at.second);
    if (previousSecond === undefined) {
      wall = Date.UTC(year, month, day, hour, minute) - SECOND_MS;
      continue;
    }
    return Date.UTC(year, month, day, hour, minute, previousSecond);
  }
  return undefined;
}

/** A wall-clock reading's calendar fields, months and weekdays counted from 0 as `Date` counts them. */
interface Calendar {
  year: number;
  month: number;
  day: number;
  weekday: number;
  hour: number;
  minute: number;
  second: number;
}

function calendarOf(wall: number): Calendar {
  const at = new Date(wall);
  return {
    year: at.getUTCFullYear(),
    month: at.getUTCMonth(),
    day: at.getUTCDate(),
    weekday: at.getUTCDay(),
    hour: at.getUTCHours(),
    minute: at.getUTCMinutes(),
    second: at.getUTCSeconds(),
  };
}

function matchesDay(cron: CronSchedule, at: Calendar): boolean {
  return cron.daysOfMonth.has(at.day) && cron.daysOfWeek.has(at.weekday);
}

function firstAtOrAfter(values: readonly number[], value: number): number | undefined {
  for (const candidate of values) if (candidate >= value) return candidate;
  return undefined;
}

function lastAtOrBefore(values: readonly number[], value: number): number | undefined {
  for (let index = values.length - 1; index >= 0; index--) {
    const candidate = values[index]!;
    if (candidate <= value) return candidate;
  }
  return undefined;
}
