import { latestSlotAtOrBefore } from './slots.js';
import type { Strategy } from './types.js';

/**
 * The `missed` policy. With `skip`, slots that passed while no worker ran are gone. With `once`, the
 * latest of them runs (once, however many were missed) if it is no older than `missedGrace`: a weekday
 * DCA whose worker restarted at 10:04 still buys its 10:00 slot, but not one from last night.
 */
export interface CatchUpInput {
  strategy: Strategy;
  now: Date;
  /** The latest slot this strategy already handled (placed, skipped or failed), if any. */
  lastHandledSlot?: Date;
}

export function slotToCatchUp({ strategy, now, lastHandledSlot }: CatchUpInput): Date | undefined {
  if (strategy.missed === 'skip') return undefined;
  const slot = latestSlotAtOrBefore(strategy.schedule, strategy.timezone, now);
  if (slot === undefined) return undefined;
  if (lastHandledSlot !== undefined && slot.getTime() <= lastHandledSlot.getTime()) return undefined;
  if (now.getTime() - slot.getTime() > strategy.missedGraceMs) return undefined;
  return slot;
}
