/**
 * Where each target stands, for `status`, the console and the REST API: every running version of the scope's
 * strategies that is a target, rebuilt from the document its version stored (the files may say something
 * else while a change waits for approval, and the console runs without them), with its progress read from
 * the record as the engine reads it (spend figures over its window). Reads the database only; never the
 * service.
 */
import type { AccountScope, Database, RunningVersion } from '../db/index.js';
import {
  isTarget,
  parseStrategyText,
  type TargetStanding,
  type TargetStrategy,
  targetStanding,
} from '../strategy/index.js';

export interface TargetReport {
  name: string;
  account: string;
  /** The running version, whose document this is. */
  version: number;
  measure: 'spend' | 'receive';
  window: { start: Date; end: Date };
  /** The running version's configuration (total, `every`, slice, maxPrice, opportunistic, timezone). */
  strategy: TargetStrategy;
  standing: TargetStanding;
}

/** The scope's running targets at `now`, by account and name. */
export async function readTargets(
  database: Database,
  scope: AccountScope,
  now: Date,
): Promise<TargetReport[]> {
  const running = await database.strategyVersions.listRunningTargets(scope);
  const targets = running.flatMap((version) => {
    const strategy = targetOf(version);
    return strategy ? [{ version, strategy }] : [];
  });
  return Promise.all(
    targets.map(async ({ version, strategy }) => {
      const progress = await database.cycles.targetProgress({
        strategy: version.strategy,
        account: version.account,
        window: strategy.target,
      });
      return {
        name: version.strategy,
        account: version.account,
        version: version.version,
        measure: strategy.target.measure,
        window: { start: strategy.target.start, end: strategy.target.end },
        strategy,
        standing: targetStanding(strategy, progress, now),
      };
    }),
  );
}

/**
 * The version's document as a target; undefined for another kind (the text filter lets a few through) and
 * for a document that no longer validates, which the worker does not run either (it logs why).
 */
function targetOf(version: RunningVersion): TargetStrategy | undefined {
  const parsed = parseStrategyText(version.content, `${version.strategy} (version ${version.version})`);
  const strategy = parsed.strategies[0]?.strategy;
  if (parsed.problems.length > 0 || !strategy || !isTarget(strategy)) return undefined;
  return strategy;
}
