/**
 * Strategy versions: every distinct configuration of a strategy (by config hash) numbered 1, 2, 3 ... with
 * its diff against the version numbered before, who recorded it, who approved it, and which one runs.
 *
 * What runs is decided in one place (runningChoice): the version the files hold when it is approved, else
 * the version approved last, else none. With changes `apply` the worker approves what the files hold as it
 * records it; with `approve` a person does (approve below), and the worker moves to it on its next pass.
 * Recording and approving take one transaction-scoped advisory lock, so replicas loading the same files
 * number a new configuration once; each move of the running version and each approval is written with its
 * audit row in the same transaction.
 */
import { and, asc, eq, or, sql } from 'drizzle-orm';
import { TreasuryError } from '../../errors.js';
// The diff module itself, not the strategy barrel: every process that opens the database loads this file,
// and the barrel brings the strategy parser and its schemas (11 MB of RSS, 4 MB of heap), which V8's heap
// growth then multiplies: the export bench's 1,000,000 orders peaked 15 MB lower without them.
import { unifiedDiff } from '../../strategy/text-diff.js';
import { type AccountScope, accountCondition } from '../account-scope.js';
import { advisoryLockKey } from '../advisory-key.js';
import { arrayParam, insertRows, rowSlices } from '../bulk.js';
import type { DrizzleExecutor, DrizzleHandle } from '../connection.js';
import { strategies, strategyVersions } from '../schema.js';
import { approverNamed } from './approvals.js';
import { appendAudit } from './audit.js';
import { type Outbox, strategyVersionPending } from './notification-events.js';
import { foldedName } from './people.js';

export type StrategyChanges = 'apply' | 'approve';

/** A strategy as the files hold it now. */
export interface LoadedStrategyText {
  name: string;
  /** strategyHash of its validated configuration: equal hashes are the same version. */
  hash: string;
  /** Its document as written. */
  text: string;
}

export interface StrategyVersion {
  strategy: string;
  version: number;
  configHash: string;
  content: string;
  /** Unified diff against the version numbered before (against nothing for version 1). */
  diff: string;
  createdAt: Date;
  /** Who recorded it: the worker's actor (TREASURY_ACTOR, else `automation`); a file's author is unknown. */
  createdBy: string;
  approvedAt: Date | null;
  approvedBy: string | null;
  running: boolean;
}

/** The running version of a strategy, with the account its `strategies` row names. */
export interface RunningVersion {
  strategy: string;
  version: number;
  account: string;
  content: string;
}

/** What the worker runs of one strategy after recording the files. */
export interface VersionResolution {
  name: string;
  /** The version the files hold. */
  fileVersion: number;
  /** The version that runs, null when none is approved yet (a new strategy waiting for approval). */
  runningVersion: number | null;
  /** The running version's document when it is not the files' (approve mode, a change waiting). */
  runningContent: string | null;
}

export type StrategyVersionErrorCode =
  | 'STRATEGY_NOT_FOUND'
  | 'STRATEGY_VERSION_NOT_FOUND'
  | 'STRATEGY_VERSION_APPROVED'
  | 'STRATEGY_SELF_APPROVAL';

export class StrategyVersionError extends TreasuryError {
  override readonly name = 'StrategyVersionError';
  constructor(
    readonly code: StrategyVersionErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export interface StrategyVersionsRepository {
  /**
   * Records what the files hold (a new configuration becomes the next version) and moves each strategy's
   * running version to what runningChoice says, approving the files' version first when changes apply.
   * Writes nothing, and takes no lock, when nothing changed.
   */
  record(
    loaded: readonly LoadedStrategyText[],
    options: { changes: StrategyChanges; actor: string },
  ): Promise<VersionResolution[]>;
  /** The version each strategy should run now given what the files hold (no writes): for noticing approvals. */
  runningChoices(files: ReadonlyMap<string, number>): Promise<Map<string, number | null>>;
  /** Oldest first; empty for an unknown strategy. */
  list(strategy: string): Promise<StrategyVersion[]>;
  /**
   * The running versions of the scope's strategies that may be targets, by account and name: those the worker
   * recorded as targets, and those whose document has the word `target` (a version that began to run since
   * the worker last recorded the strategy). A filter on the text, so that a status of 10,000 DCA strategies
   * parses none of them; the caller parses what it returns and keeps the targets (a DCA named `target-fund`
   * comes back too).
   */
  listRunningTargets(scope: AccountScope): Promise<RunningVersion[]>;
  /**
   * Approves a version as `person`. Refused for an unknown strategy or version, a version already approved,
   * and for the person who recorded it. The worker moves to it on its next pass (runningChoice).
   */
  approve(strategy: string, version: number, person: string): Promise<StrategyVersion>;
}

/** One lock for all recording and approving: version numbers are assigned under it. */
const LOCK_KEY = advisoryLockKey('strategy_versions');

/** A version as planning needs it, without its text. */
interface VersionHead {
  strategy: string;
  version: number;
  configHash: string;
  approvedAt: Date | null;
  running: boolean;
}

/**
 * The version a strategy runs: the files' version when approved, else the one approved last (a change
 * waiting for approval leaves the last approved content running), else none.
 */
export function runningChoice(heads: readonly VersionHead[], fileVersion: number): number | null {
  const file = heads.find((head) => head.version === fileVersion);
  if (file?.approvedAt) return file.version;
  let latest: VersionHead | undefined;
  for (const head of heads) {
    if (head.approvedAt && (!latest || head.approvedAt > latest.approvedAt!)) latest = head;
  }
  return latest?.version ?? null;
}

/** `(strategy, version) in (pairs)`: one condition, with two array parameters, for any number of versions. */
function versionIn(pairs: readonly { strategy: string; version: number }[]) {
  return sql`(${strategyVersions.strategy}, ${strategyVersions.version}) in (select * from unnest(${arrayParam(
    pairs.map((pair) => pair.strategy),
    'text',
  )}, ${arrayParam(
    pairs.map((pair) => pair.version),
    'integer',
  )}))`;
}

/** The columns that name one version. */
const versionKey = { strategy: strategyVersions.strategy, version: strategyVersions.version };

/** `column = any(names)`: one array parameter for any number of names. */
function nameIn(column: typeof strategies.name | typeof strategyVersions.strategy, names: readonly string[]) {
  return sql`${column} = any(${arrayParam(names, 'text')})`;
}

interface Plan {
  inserts: (typeof strategyVersions.$inferInsert)[];
  /** Versions the automation approves as it records them (changes: apply), already in the table. */
  approvals: { strategy: string; version: number }[];
  moves: { strategy: string; from: number | null; to: number }[];
  pending: { strategy: string; version: number; running: number | null; diff: string }[];
  resolutions: VersionResolution[];
  /** (strategy, version) whose content the resolutions still need. */
  contentWanted: { strategy: string; version: number }[];
}

export function createStrategyVersionsRepository(
  db: DrizzleHandle,
  clock: () => Date,
  outbox: Outbox,
): StrategyVersionsRepository {
  const readHeads = async (executor: DrizzleExecutor, names: readonly string[]) => {
    const byName = new Map<string, VersionHead[]>();
    if (names.length === 0) return byName;
    const rows = await executor
      .select({
        ...versionKey,
        configHash: strategyVersions.configHash,
        approvedAt: strategyVersions.approvedAt,
        running: strategyVersions.running,
      })
      .from(strategyVersions)
      .where(nameIn(strategyVersions.strategy, names))
      .orderBy(asc(strategyVersions.strategy), asc(strategyVersions.version));
    for (const row of rows) {
      const list = byName.get(row.strategy) ?? [];
      list.push(row);
      byName.set(row.strategy, list);
    }
    return byName;
  };

  const readContents = async (
    executor: DrizzleExecutor,
    wanted: readonly { strategy: string; version: number }[],
  ) => {
    const contents = new Map<string, string>();
    if (wanted.length === 0) return contents;
    const rows = await executor
      .select({
        ...versionKey,
        content: strategyVersions.content,
      })
      .from(strategyVersions)
      .where(versionIn(wanted));
    for (const row of rows) contents.set(`${row.strategy}\u0000${row.version}`, row.content);
    return contents;
  };

  /** Strategies without versions whose `strategies` row holds the hash the files hold now. */
  const readRanBefore = async (
    executor: DrizzleExecutor,
    loaded: readonly LoadedStrategyText[],
    heads: ReadonlyMap<string, readonly VersionHead[]>,
  ) => {
    const fresh = loaded.filter((entry) => !heads.has(entry.name));
    const hashes = new Map(fresh.map((entry) => [entry.name, entry.hash]));
    const ran = new Set<string>();
    if (fresh.length === 0) return ran;
    const rows = await executor
      .select({ name: strategies.name, hash: strategies.configHash })
      .from(strategies)
      .where(nameIn(strategies.name, [...hashes.keys()]));
    for (const row of rows) if (hashes.get(row.name) === row.hash) ran.add(row.name);
    return ran;
  };

  const plan = async (
    executor: DrizzleExecutor,
    loaded: readonly LoadedStrategyText[],
    changes: StrategyChanges,
    actor: string,
    now: Date,
    /** False for a look at whether anything is to be written: no diffs, no baselines. */
    complete = true,
  ): Promise<Plan> => {
    const heads = await readHeads(
      executor,
      loaded.map((entry) => entry.name),
    );
    const result: Plan = {
      inserts: [],
      approvals: [],
      moves: [],
      pending: [],
      resolutions: [],
      contentWanted: [],
    };
    // The diff of a new version needs the text of the version before it: read those in one go first.
    const previous = loaded.flatMap((entry) => {
      const list = heads.get(entry.name) ?? [];
      const last = list.at(-1);
      return last && !list.some((head) => head.configHash === entry.hash)
        ? [{ strategy: entry.name, version: last.version }]
        : [];
    });
    const previousContents = complete ? await readContents(executor, previous) : new Map<string, string>();
    const baselines =
      complete && changes === 'approve' ? await readRanBefore(executor, loaded, heads) : new Set<string>();
    for (const entry of loaded) {
      const list = heads.get(entry.name) ?? [];
      let file = list.find((head) => head.configHash === entry.hash);
      if (!file) {
        const last = list.at(-1);
        const version = (last?.version ?? 0) + 1;
        const before = last ? (previousContents.get(`${entry.name}\u0000${last.version}`) ?? '') : '';
        const diff = complete
          ? unifiedDiff(before, entry.text, {
              from: last ? `${entry.name} version ${last.version}` : '/dev/null',
              to: `${entry.name} version ${version}`,
            })
          : '';
        // A strategy that ran before versions were recorded, with the configuration it ran with, is its
        // own baseline: turning approval on must not stop what already runs.
        const approvedAt = changes === 'apply' || baselines.has(entry.name) ? now : null;
        result.inserts.push({
          strategy: entry.name,
          version,
          configHash: entry.hash,
          content: entry.text,
          diff,
          createdAt: now,
          createdBy: actor,
          approvedAt,
          approvedBy: approvedAt ? actor : null,
        });
        file = { strategy: entry.name, version, configHash: entry.hash, approvedAt, running: false };
        list.push(file);
        if (!approvedAt) {
          const running = runningChoice(list, version);
          result.pending.push({ strategy: entry.name, version, running, diff });
        }
      } else if (changes === 'apply' && !file.approvedAt) {
        file.approvedAt = now;
        result.approvals.push({ strategy: entry.name, version: file.version });
      }
      const current = list.find((head) => head.running)?.version ?? null;
      const running = runningChoice(list, file.version);
      if (running !== null && running !== current) {
        result.moves.push({ strategy: entry.name, from: current, to: running });
      }
      if (running !== null && running !== file.version)
        result.contentWanted.push({ strategy: entry.name, version: running });
      result.resolutions.push({
        name: entry.name,
        fileVersion: file.version,
        runningVersion: running,
        runningContent: null,
      });
    }
    return result;
  };

  const write = async (tx: DrizzleExecutor, steps: Plan, actor: string, now: Date) => {
    // One statement per kind of write, never one per strategy: a first start records thousands of them.
    // The old running versions off first: the unique index allows one running version per strategy.
    const leaving = steps.moves.flatMap((move) =>
      move.from === null ? [] : [{ strategy: move.strategy, version: move.from }],
    );
    if (leaving.length > 0)
      await tx.update(strategyVersions).set({ running: false }).where(versionIn(leaving));
    const arriving = new Set(steps.moves.map((move) => `${move.strategy}\u0000${move.to}`));
    const inserts = steps.inserts.map((row) => ({
      ...row,
      running: arriving.has(`${row.strategy}\u0000${row.version}`),
    }));
    if (inserts.length > 0) await insertRows(tx, strategyVersions, inserts);
    if (steps.approvals.length > 0)
      await tx
        .update(strategyVersions)
        .set({ approvedAt: now, approvedBy: actor })
        .where(versionIn(steps.approvals));
    const inserted = new Set(inserts.map((row) => `${row.strategy}\u0000${row.version}`));
    const existing = steps.moves.flatMap((move) =>
      inserted.has(`${move.strategy}\u0000${move.to}`) ? [] : [{ strategy: move.strategy, version: move.to }],
    );
    if (existing.length > 0)
      await tx.update(strategyVersions).set({ running: true }).where(versionIn(existing));
    // The audit rows of the moves, and the messages of the changes that wait for a person.
    const audits = steps.moves.map((move) => ({
      actor,
      action: 'strategy.version_applied' as const,
      subject: `strategy:${move.strategy}`,
      before: move.from === null ? null : { version: move.from },
      after: { version: move.to },
    }));
    await appendAudit(tx, audits, now);
    const messages = steps.pending.flatMap((pending) => strategyVersionPending(pending, now));
    if (messages.length > 0) await outbox.enqueue(tx, messages);
  };

  const toVersion = (row: typeof strategyVersions.$inferSelect): StrategyVersion => ({ ...row });

  return {
    async record(loaded, { changes, actor }) {
      if (loaded.length === 0) return [];
      const now = clock();
      // Most loads change nothing (a restart, a replica joining): read without the lock and stop there.
      const probe = await plan(db, loaded, changes, actor, now, false);
      const writes = probe.inserts.length + probe.approvals.length + probe.moves.length;
      // Planned and written a slice of strategies at a time: a first start with thousands of strategies
      // would otherwise hold every text, diff and row at once.
      const steps: Pick<Plan, 'resolutions' | 'contentWanted'> =
        writes === 0
          ? probe
          : await db.transaction(async (tx) => {
              await tx.execute(sql`select pg_advisory_xact_lock(${LOCK_KEY}::bigint)`);
              const done: Pick<Plan, 'resolutions' | 'contentWanted'> = {
                resolutions: [],
                contentWanted: [],
              };
              for (const slice of rowSlices(loaded)) {
                const fresh = await plan(tx, slice, changes, actor, now);
                await write(tx, fresh, actor, now);
                done.resolutions.push(...fresh.resolutions);
                done.contentWanted.push(...fresh.contentWanted);
              }
              return done;
            });
      const contents = await readContents(db, steps.contentWanted);
      return steps.resolutions.map((resolution) =>
        resolution.runningVersion === null || resolution.runningVersion === resolution.fileVersion
          ? resolution
          : {
              ...resolution,
              runningContent: contents.get(`${resolution.name}\u0000${resolution.runningVersion}`) ?? null,
            },
      );
    },

    async runningChoices(files) {
      const heads = await readHeads(db, [...files.keys()]);
      return new Map(
        [...files].map(([name, fileVersion]) => [name, runningChoice(heads.get(name) ?? [], fileVersion)]),
      );
    },

    async list(strategy) {
      const rows = await db
        .select()
        .from(strategyVersions)
        .where(eq(strategyVersions.strategy, strategy))
        .orderBy(asc(strategyVersions.version));
      return rows.map(toVersion);
    },

    async listRunningTargets(scope) {
      return (
        db
          .select({
            strategy: strategyVersions.strategy,
            version: strategyVersions.version,
            account: strategies.account,
            content: strategyVersions.content,
          })
          .from(strategyVersions)
          // The account is the strategy's row's; a strategy has no cycles before the worker records that row.
          .innerJoin(strategies, eq(strategies.name, strategyVersions.strategy))
          .where(
            and(
              eq(strategyVersions.running, true),
              or(eq(strategies.kind, 'target'), sql`${strategyVersions.content} ~ ${'\\ytarget\\y'}`),
              accountCondition(strategies.account, scope),
            ),
          )
          .orderBy(asc(strategies.account), asc(strategyVersions.strategy))
      );
    },

    async approve(strategy, version, given) {
      const now = clock();
      return db.transaction(async (tx) => {
        await tx.execute(sql`select pg_advisory_xact_lock(${LOCK_KEY}::bigint)`);
        const rows = await tx
          .select()
          .from(strategyVersions)
          .where(eq(strategyVersions.strategy, strategy))
          .orderBy(asc(strategyVersions.version));
        if (rows.length === 0)
          throw new StrategyVersionError('STRATEGY_NOT_FOUND', `no strategy "${strategy}" has versions`);
        const row = rows.find((candidate) => candidate.version === version);
        if (!row) {
          throw new StrategyVersionError(
            'STRATEGY_VERSION_NOT_FOUND',
            `strategy ${strategy} has no version ${version} (its versions are 1 to ${rows.at(-1)!.version})`,
          );
        }
        if (row.approvedAt) {
          throw new StrategyVersionError(
            'STRATEGY_VERSION_APPROVED',
            `version ${version} of ${strategy} was already approved by ${row.approvedBy} at ${row.approvedAt.toISOString()}`,
          );
        }
        if (foldedName(row.createdBy) === foldedName(given)) {
          throw new StrategyVersionError(
            'STRATEGY_SELF_APPROVAL',
            `${given} recorded version ${version} of ${strategy} and cannot approve it: another person must`,
          );
        }
        const person = await approverNamed(tx, given);
        const [approved] = await tx
          .update(strategyVersions)
          .set({ approvedAt: now, approvedBy: person })
          .where(and(eq(strategyVersions.strategy, strategy), eq(strategyVersions.version, version)))
          .returning();
        const running = rows.find((candidate) => candidate.running)?.version ?? null;
        await appendAudit(
          tx,
          {
            actor: person,
            action: 'strategy.version_approved',
            subject: `strategy:${strategy}`,
            before: running === null ? null : { version: running },
            after: { version },
          },
          now,
        );
        return toVersion(approved!);
      });
    },
  };
}
