/**
 * The `missed` policy at start: slots that passed while no worker ran are dropped (`skip`, the default) or,
 * with `once`, the latest of them runs (trigger 'missed') if it is within the strategy's grace. Never more
 * than one per strategy, and never one that any replica already handled.
 */
import { type Strategy, slotToCatchUp } from '../strategy/index.js';
import type { EngineContext } from './context.js';
import { withDatabase } from './engine-errors.js';

export interface MissedSlot {
  strategy: Strategy;
  slot: Date;
}

export async function findMissedSlots(
  context: EngineContext,
  strategies: readonly Strategy[],
  now: Date,
): Promise<MissedSlot[]> {
  const found: MissedSlot[] = [];
  for (const strategy of strategies) {
    if (!strategy.enabled || strategy.missed !== 'once') continue;
    const lastHandledSlot = await withDatabase(context, 'cycles_latest_slot', () =>
      context.database.cycles.latestSlot(strategy.name),
    );
    const slot = slotToCatchUp({ strategy, now, lastHandledSlot: lastHandledSlot ?? undefined });
    if (slot !== undefined) found.push({ strategy, slot });
  }
  return found;
}
