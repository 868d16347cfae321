/**
 * The worker watching its targets, at every maintenance pass of every replica: where each loaded target
 * stands (strategy/target.ts, from the record), as gauges, and the notices a finance owner waits for:
 * `target_completed` once reached, `target_missed` once its window ended short, `target_behind` when it is more
 * than engine.targets.behindShare of its total behind the straight line with under a quarter of its window
 * left. Every replica looks; each notice has a key (the target as defined, and for `target_behind` the
 * strategy's version), so the outbox writes it once however many replicas, passes and restarts see it.
 */

import { type Decimal, formatMoney, toDecimalText, ZERO } from '../money.js';
import type { NotificationEvent } from '../notify/index.js';
import { TARGET_LATE_WINDOW_LEFT } from '../observability/alert-rules.js';
import { gaugeValue, type Metrics } from '../observability/metrics.js';
import {
  accountOf,
  isTarget,
  leftInFiat,
  type Strategy,
  type TargetProgress,
  type TargetStanding,
  type TargetStrategy,
  targetStanding,
} from '../strategy/index.js';
import type { AccountContext } from './context.js';
import { withDatabase } from './engine-errors.js';

export type TargetNotice = 'target_completed' | 'target_behind' | 'target_missed';

export interface TargetWatchSettings {
  /** engine.targets.behindShare. */
  behindShare: number;
  /**
   * How long after `end` a target short of its total is judged missed: a slot just before `end` may still be
   * buying (a cycle claimed and quoting), and by this (engine.recovery.abandonAfterMs) recovery has ended
   * every such cycle that did not reach its intent.
   */
  missedAfterMs: number;
}

export interface WatchedTarget {
  strategy: string;
  standing: TargetStanding;
  /** The notice this pass found due (written once: a repeat of it is ignored by the outbox). */
  notice?: TargetNotice;
}

/**
 * The targets a replica watches: enabled, and buying for real. A dry run (the strategy's or the worker's)
 * buys nothing, so its progress stays at zero and would only raise a false alarm.
 */
export function watchedTargets(strategies: readonly Strategy[], workerDryRun: boolean): TargetStrategy[] {
  return strategies.filter(
    (strategy): strategy is TargetStrategy =>
      isTarget(strategy) && strategy.enabled && !strategy.dryRun && !workerDryRun,
  );
}

/** How far behind its straight line an active target is, as a share of its total; 0 on or ahead of it. */
export function behindShareOf(standing: TargetStanding): Decimal {
  if (standing.state !== 'active' || !standing.ahead.isNegative()) return ZERO;
  return standing.ahead.negated().dividedBy(standing.total);
}

/** The notice a target's standing calls for at `now`, if any. */
export function noticeDue(
  strategy: TargetStrategy,
  standing: TargetStanding,
  now: Date,
  settings: TargetWatchSettings,
): TargetNotice | undefined {
  if (standing.state === 'completed') return 'target_completed';
  if (standing.state === 'missed')
    return now.getTime() >= strategy.target.end.getTime() + settings.missedAfterMs
      ? 'target_missed'
      : undefined;
  const late =
    standing.state === 'active' &&
    standing.windowLeft.lessThan(TARGET_LATE_WINDOW_LEFT) &&
    behindShareOf(standing).greaterThan(settings.behindShare);
  return late ? 'target_behind' : undefined;
}

/**
 * The message of a notice. Its key names the target as defined (measure, total, window): a total raised
 * after completion is a new target, told again when reached; `target_behind` is told once per version too.
 */
export function targetNoticeEvent(
  strategy: TargetStrategy,
  progress: TargetProgress,
  standing: TargetStanding,
  notice: TargetNotice,
  now: Date,
): NotificationEvent {
  const { measure, total, start, end } = strategy.target;
  const target = `${strategy.name}_${measure}_${toDecimalText(total)}_${start.getTime()}_${end.getTime()}`;
  const key =
    notice === 'target_behind' ? `${notice}_${target}_v${strategy.version ?? 0}` : `${notice}_${target}`;
  return {
    type: notice,
    subject: `strategy:${strategy.name}`,
    occurredAt: notice === 'target_missed' ? end : now,
    key,
    data: {
      ...noticeData(strategy, progress, standing),
      ...(notice === 'target_behind' ? pace(strategy, standing) : {}),
    },
  };
}

function noticeData(strategy: TargetStrategy, progress: TargetProgress, standing: TargetStanding) {
  const { measure, start, end } = strategy.target;
  const inMeasure = measure === 'spend' ? fiat : crypto;
  const fiatLeft = leftInFiat(strategy, progress);
  return {
    strategy: strategy.name,
    account: accountOf(strategy),
    version: strategy.version ?? null,
    measure,
    total: inMeasure(standing.total),
    done: inMeasure(standing.done),
    left: inMeasure(standing.left),
    // A receive target's fiat left is at the window's average quote: unknown before its first quote.
    leftFiat: fiatLeft === undefined ? null : fiat(fiatLeft),
    progressPct: percent(standing.ratio),
    spent: fiat(standing.spent),
    received: crypto(standing.received),
    averagePrice: standing.averagePrice ? price(standing.averagePrice) : null,
    quoteAverage: standing.quoteAverage ? price(standing.quoteAverage) : null,
    windowStart: start.toISOString(),
    windowEnd: end.toISOString(),
  };
}

/** Where a target behind should be, and how little of its window is left to get there. */
function pace(strategy: TargetStrategy, standing: TargetStanding) {
  const inMeasure = strategy.target.measure === 'spend' ? fiat : crypto;
  return {
    line: inMeasure(standing.line),
    behind: inMeasure(standing.ahead.negated()),
    behindPct: percent(behindShareOf(standing)),
    windowLeftPct: percent(standing.windowLeft),
    projectedFinish: standing.projectedFinish?.toISOString() ?? null,
  };
}

/** The service's scales: cents, micro-units of crypto, prices to four places. */
const fiat = (value: Decimal) => formatMoney(value, 2, 'halfEven');
const crypto = (value: Decimal) => formatMoney(value, 6, 'halfEven');
const price = (value: Decimal) => formatMoney(value, 4, 'halfEven');
const percent = (share: Decimal) => formatMoney(share.times(100), 2, 'halfEven');

/**
 * The watch of one replica: it keeps which strategies it exports series for, so that a strategy unloaded,
 * disabled or no longer a target loses them at the next pass.
 */
export class TargetWatch {
  private readonly exported = new Set<string>();

  constructor(private readonly metrics: Metrics) {}

  /** One account's targets among `targets` (watchedTargets): their standing at `now`, gauges and notices. */
  async watch(
    context: AccountContext,
    targets: readonly TargetStrategy[],
    now: Date,
  ): Promise<WatchedTarget[]> {
    const settings: TargetWatchSettings = {
      behindShare: context.settings.targets.behindShare,
      missedAfterMs: context.settings.recovery.abandonAfterMs,
    };
    const watched: WatchedTarget[] = [];
    for (const strategy of targets) {
      if (accountOf(strategy) !== context.account.name) continue;
      const progress = await withDatabase(context, 'target_progress', () =>
        context.database.cycles.targetProgress({
          strategy: strategy.name,
          account: context.account.name,
          window: strategy.target,
        }),
      );
      const standing = targetStanding(strategy, progress, now);
      this.show(strategy.name, standing);
      const notice = noticeDue(strategy, standing, now, settings);
      watched.push({ strategy: strategy.name, standing, ...(notice ? { notice } : {}) });
      if (notice === undefined) continue;
      const event = targetNoticeEvent(strategy, progress, standing, notice, now);
      const written = await withDatabase(context, 'target_notice', () =>
        context.database.notifications.enqueueNow([event]),
      );
      if (written === 0) continue;
      const fields = { strategy: strategy.name, notice, left: event.data.left };
      if (notice === 'target_completed') context.logger.info(fields, 'target notice written');
      else context.logger.warn({ ...fields, alert: notice }, 'target notice written');
    }
    return watched;
  }

  /** Drops the series of every strategy not among `targets`, the ones watched now. */
  keepOnly(targets: readonly TargetStrategy[]): void {
    const names = new Set(targets.map((strategy) => strategy.name));
    for (const strategy of this.exported) {
      if (names.has(strategy)) continue;
      this.metrics.targetProgress.remove({ strategy });
      this.metrics.targetBehind.remove({ strategy });
      this.metrics.targetWindowLeft.remove({ strategy });
      this.exported.delete(strategy);
    }
  }

  private show(strategy: string, standing: TargetStanding): void {
    this.metrics.targetProgress.set({ strategy }, gaugeValue(standing.ratio));
    this.metrics.targetBehind.set({ strategy }, gaugeValue(behindShareOf(standing)));
    this.metrics.targetWindowLeft.set({ strategy }, gaugeValue(standing.windowLeft));
    this.exported.add(strategy);
  }
}
