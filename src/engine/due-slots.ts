/**
 * Which slot a schedule tick or the catch-up sweep should run, computed from the clock rather than taken
 * from node-cron: node-cron never fires a slot that falls in a DST gap, and a blocked event loop can make
 * it skip ticks. The strategy module's slot rules are the single truth about what is due.
 */
import { type CronSchedule, latestSlotAtOrBefore, slotsBetween } from '../strategy/index.js';

/** At a tick: the latest slot at or before now (node-cron fires at or after its instant, never before). */
export function slotAtTick(schedule: CronSchedule, timeZone: string, now: Date): Date | undefined {
  return latestSlotAtOrBefore(schedule, timeZone, now);
}

/**
 * Slots of the sweep window (after, until], newest `max` of them: after a long stall the sweep catches up
 * recent slots, not a backlog.
 */
export function slotsToSweep(
  schedule: CronSchedule,
  timeZone: string,
  after: Date,
  until: Date,
  max: number,
): Date[] {
  if (until.getTime() <= after.getTime()) return [];
  const slots = slotsBetween(schedule, timeZone, after, until);
  return slots.length > max ? slots.slice(-max) : slots;
}
