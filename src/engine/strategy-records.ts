import type { JsonValue, StrategySeen } from '../db/index.js';
import { isDecimal, toDecimalText } from '../money.js';
import type { Metrics } from '../observability/metrics.js';
import { accountOf, nextSlotAfter, type Strategy, strategyHash } from '../strategy/index.js';
import type { EngineContext } from './context.js';
import { withDatabase } from './engine-errors.js';

/** Records the strategies just loaded (config as JSON with decimals as text, and its hash). */
export async function recordStrategiesSeen(context: EngineContext, strategies: readonly Strategy[]) {
  const seen: StrategySeen[] = strategies.map((strategy) => ({
    name: strategy.name,
    kind: strategy.kind,
    account: accountOf(strategy),
    config: JSON.parse(
      JSON.stringify(strategy, (_key, value) => (isDecimal(value) ? toDecimalText(value) : value)),
    ) as JsonValue,
    hash: strategyHash(strategy),
  }));
  await withDatabase(context, 'strategies_upsert', () => context.database.strategies.upsertSeen(seen));
}

const WEEK_MS = 7 * 86_400_000;
/** Enough slots to see the pattern of any schedule; a per-second one would otherwise cost 600,000 steps. */
const MAX_SLOTS = 200;

/**
 * treasury_strategy_interval_seconds: the longest gap between consecutive slots in the coming week (or
 * among its first slots), which the alert rules compare with the age of the last successful cycle.
 */
export function setStrategyIntervals(metrics: Metrics, strategies: readonly Strategy[], now: Date): void {
  metrics.strategyInterval.reset();
  // Thousands of strategies usually share a few schedules; each schedule is walked once.
  const bySchedule = new Map<string, number | undefined>();
  for (const strategy of strategies) {
    if (!strategy.enabled) continue;
    const key = `${strategy.timezone} ${strategy.schedule}`;
    if (!bySchedule.has(key)) bySchedule.set(key, longestGapMs(strategy, now));
    const longest = bySchedule.get(key);
    if (longest !== undefined) metrics.strategyInterval.set({ strategy: strategy.name }, longest / 1000);
  }
}

function longestGapMs(strategy: Strategy, now: Date): number | undefined {
  const end = now.getTime() + WEEK_MS;
  let previous = nextSlotAfter(strategy.schedule, strategy.timezone, now);
  if (previous === undefined) return undefined;
  let longest: number | undefined;
  for (let count = 0; count < MAX_SLOTS && previous.getTime() < end; count++) {
    const next = nextSlotAfter(strategy.schedule, strategy.timezone, previous);
    if (next === undefined) break;
    const gap = next.getTime() - previous.getTime();
    longest = longest === undefined ? gap : Math.max(longest, gap);
    previous = next;
  }
  return longest;
}
