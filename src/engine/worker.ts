/**
 * The long-running worker of `treasury-bot run`: loads and records the strategies (as versions: what runs is
 * what strategy-versions.ts says), applies the missed policy, schedules cycles, runs the maintenance loop,
 * and reloads the strategies on a file change, SIGHUP, or an approval of a waiting change (seen by the
 * maintenance's approvals poll). start() and stop() are idempotent; stop() lets in-flight cycles finish
 * within the drain time.
 */
import { EVERY_ACCOUNT, retryWhileUnreachable } from '../db/index.js';
import { errorCodeOf } from '../errors.js';
import { createPeriodicTask, type PeriodicTask } from '../runtime/periodic-task.js';
import {
  accountOf,
  formatProblem,
  loadStrategies,
  loadStrategiesOrThrow,
  type Strategy,
} from '../strategy/index.js';
import {
  createAdaptiveLimit,
  createLimiter,
  cycleConcurrency,
  judgeCycle,
  type Limiter,
  watchQuoteToOrder,
} from './concurrency.js';
import { type EngineContext, inAccount } from './context.js';
import { runCycle } from './cycle.js';
import { withDatabase } from './engine-errors.js';
import { Maintenance } from './maintenance.js';
import { findMissedSlots } from './missed-slots.js';
import type { CycleReport } from './outcomes.js';
import { type StrategyWatcher, watchStrategyFiles } from './reload.js';
import { Scheduler } from './scheduler.js';
import { recordStrategiesSeen, setStrategyIntervals } from './strategy-records.js';
import {
  APPLY_AS_AUTOMATION,
  approvalsChanged,
  OnceRefusal,
  resolveStrategyVersions,
  runningVersionOf,
  type VersionedStrategies,
  type VersionPolicy,
} from './strategy-versions.js';

export interface WorkerOptions {
  strategiesPath: string;
  /** False in tests that drive ticks with a fake clock. */
  useCron?: boolean;
  /** Aborted by a stop that arrives while start still waits for the database. */
  startSignal?: AbortSignal;
  /** Whether changed strategies apply at once or wait for approval; default apply, as `automation`. */
  versions?: VersionPolicy;
}

/** Cycles in flight when a burst begins; the adaptive limit widens it from there (concurrency.ts). */
const INITIAL_CONCURRENCY = 8;

export type ReloadResult =
  | {
      applied: true;
      strategies: string[];
      added: string[];
      changed: string[];
      removed: string[];
      /** Strategies whose files hold a version waiting for approval (their approved version runs, if any). */
      waiting: string[];
    }
  | { applied: false; problems: string[] };

export class Worker {
  readonly limiter: Limiter;
  readonly scheduler: Scheduler;
  readonly maintenance: Maintenance;
  private current: Strategy[] = [];
  private versioned: VersionedStrategies = { running: [], waiting: new Map() };
  private watcher: StrategyWatcher | undefined;
  /**
   * Cycles read the kill switch themselves; this keeps treasury_paused (and the log line of a flip) current
   * when no cycle is due for hours.
   */
  private readonly switchPoll: PeriodicTask<void>;
  private phase: 'new' | 'starting' | 'started' | 'stopped' = 'new';
  private stopping: Promise<void> | undefined;
  private reloading: Promise<ReloadResult> | undefined;
  private reloadAgain: Promise<ReloadResult> | undefined;
  private readonly reloadListeners: ((result: ReloadResult) => void)[] = [];

  constructor(
    private readonly context: EngineContext,
    private readonly options: WorkerOptions,
  ) {
    const { settings } = context;
    // From the old fixed bound up to the cap, as fast as cycles show they keep well within their quotes; the
    // cap follows the pace the replica keeps at the service.
    const limit = createAdaptiveLimit({
      initial: Math.min(INITIAL_CONCURRENCY, settings.concurrency),
      max: () => cycleConcurrency(settings, context.apiPace()),
    });
    this.limiter = createLimiter(limit);
    this.scheduler = new Scheduler({
      context,
      limiter: this.limiter,
      runCycle: async (request) => {
        const startedAt = performance.now();
        // The cycle works for its strategy's account from here down: its clients, its rows, its locks.
        const { account } = inAccount(context, accountOf(request.strategy));
        const watched = watchQuoteToOrder(account.tradingClient ?? account.client);
        const report = await runCycle(
          { ...context, account: { ...account, tradingClient: watched.client } },
          request,
        );
        limit.observe(startedAt, judgeCycle(report, watched.longestMs(), settings));
        return report;
      },
      useCron: options.useCron,
    });
    this.maintenance = new Maintenance(context, {
      strategies: () => this.current,
      ...(this.policy.changes === 'approve'
        ? { applyApprovedVersions: () => this.applyApprovedVersions() }
        : {}),
    });
    this.switchPoll = createPeriodicTask({
      name: 'kill switch poll',
      intervalMs: Math.max(1_000, context.settings.killSwitchCacheMs),
      logger: context.logger,
      run: async () => {
        // A failed read is counted where it fails (database errors); the next one comes soon enough.
        await withDatabase(context, 'kill_switch', () => context.killSwitch.isPaused()).catch(() => false);
      },
    });
  }

  get strategies(): readonly Strategy[] {
    return this.current;
  }

  /**
   * One cycle of a strategy now, as `treasury-bot once --strategy NAME` runs it (the running version, a
   * disabled strategy too), queued and drained with the worker's own cycles: the REST API's `once`.
   */
  async runOnce(name: string, slot: Date): Promise<CycleReport> {
    const stopped = new OnceRefusal(
      'WORKER_NOT_RUNNING',
      'the worker is not running cycles (starting or stopping)',
    );
    if (this.phase !== 'started') throw stopped;
    const report = await this.scheduler.runNow(runningVersionOf(name, this.versioned), slot, 'once');
    if (!report) throw stopped;
    return report;
  }

  async start(): Promise<void> {
    if (this.phase !== 'new') return;
    this.phase = 'starting';
    const { context } = this;
    const missed = await this.loadFirst();
    setStrategyIntervals(context.metrics, this.current, context.clock());
    this.scheduler.start(this.current);
    for (const { strategy, slot } of missed) {
      context.logger.info({ strategy: strategy.name, slot }, 'running the latest missed slot (missed: once)');
      this.scheduler.dispatch(strategy, slot, 'missed');
    }
    this.maintenance.start();
    this.switchPoll.start();
    if (context.settings.reload.watch) {
      this.watcher = watchStrategyFiles(
        this.options.strategiesPath,
        context.settings.reload.debounceMs,
        () => void this.reload(),
        context.logger,
      );
    }
    this.phase = 'started';
    context.logger.info(
      {
        strategies: this.current.map((s) => s.name),
        waitingForApproval: [...this.versioned.waiting.keys()],
        enabled: this.scheduler.size,
        concurrency: context.settings.concurrency,
        replica: context.replicaId,
      },
      'worker started',
    );
  }

  /**
   * The first load: records the files' versions and returns the latest missed slots. A method of its own
   * so that the loaded files (every strategy's document, and the strategies as parsed) go with its scope:
   * in start() they shared the scope of the closures start() leaves behind (the file watcher's), which
   * kept them for the worker's life (about 5 MB of heap with 10,000 strategies).
   */
  private async loadFirst() {
    const { context } = this;
    const loaded = await loadStrategiesOrThrow(this.options.strategiesPath, [
      ...this.context.accounts.keys(),
    ]);
    // The database may still be coming back (a failover, a deploy): wait for it rather than exit.
    return retryWhileUnreachable(
      async () => {
        const versioned = await resolveStrategyVersions(context, loaded, this.policy);
        await recordStrategiesSeen(context, versioned.running);
        this.versioned = versioned;
        this.current = versioned.running;
        await this.warnHaltedStrategies();
        return findMissedSlots(context, this.current, context.clock());
      },
      {
        waitMs: context.settings.startupDatabaseWaitMs,
        signal: this.options.startSignal,
        onRetry: (error, attempt, delayMs) =>
          context.logger.warn(
            { err: error, attempt, delayMs },
            'database not reachable at start; waiting for it',
          ),
      },
    );
  }

  /**
   * Validates the strategy files and applies them, or keeps the running set and logs every problem. A call
   * while a reload runs gets one more reload after it (shared by every such call): the running one may have
   * read the files before the change that made the call.
   */
  reload(): Promise<ReloadResult> {
    if (this.reloading) {
      this.reloadAgain ??= this.reloading.then(() => {
        this.reloadAgain = undefined;
        return this.reload();
      });
      return this.reloadAgain;
    }
    this.reloading = this.applyFiles().finally(() => {
      this.reloading = undefined;
    });
    return this.reloading;
  }

  onReload(listener: (result: ReloadResult) => void): void {
    this.reloadListeners.push(listener);
  }

  async stop(): Promise<void> {
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  private async shutdown(): Promise<void> {
    this.phase = 'stopped';
    this.watcher?.close();
    // Not awaited before the drain: a read waiting on a database that is away must not delay it.
    const switchPollStopped = this.switchPoll.stop();
    const drained = await this.scheduler.stop(this.context.settings.drainTimeoutMs);
    if (!drained) {
      this.context.logger.error(
        { drainTimeoutMs: this.context.settings.drainTimeoutMs },
        'stopping with cycles still in flight; recovery and reconciliation will settle them',
      );
    }
    await Promise.all([this.maintenance.stop(), switchPollStopped]);
  }

  private get policy(): VersionPolicy {
    return this.options.versions ?? APPLY_AS_AUTOMATION;
  }

  /** A halt outlives restarts; whoever starts a replica should see that some automation stays off. */
  private async warnHaltedStrategies(): Promise<void> {
    const { context } = this;
    const halted = await withDatabase(context, 'strategies_halted', () =>
      context.database.strategies.listHalted(EVERY_ACCOUNT),
    );
    for (const strategy of halted) {
      context.logger.warn(
        {
          alert: 'strategy_halted',
          strategy: strategy.name,
          since: strategy.haltedAt,
          reason: strategy.haltReason,
        },
        'strategy HALTED: its cycles skip until an operator settles its unsure cycles (treasury-bot resolve) and runs treasury-bot unhalt',
      );
    }
  }

  /**
   * A version approved from another process (the CLI, the console), seen by the maintenance's approvals
   * poll (engine.approvals.pollMs): the reload applies it, so it runs from the next slot.
   */
  private async applyApprovedVersions(): Promise<void> {
    // A failed read is counted where it fails (database errors); the next tick asks again.
    const changed = await approvalsChanged(this.context, this.versioned).catch(() => false);
    if (changed) await this.reload();
  }

  private async applyFiles(): Promise<ReloadResult> {
    const { context } = this;
    let result: ReloadResult;
    try {
      const loaded = await loadStrategies(this.options.strategiesPath, [...this.context.accounts.keys()]);
      if (!loaded.valid) {
        result = { applied: false, problems: loaded.problems.map(formatProblem) };
        context.logger.error(
          { problems: result.problems },
          'strategy change rejected; the previous strategies keep running',
        );
      } else if (this.phase !== 'started') {
        result = { applied: false, problems: ['the worker is not running'] };
      } else {
        const versioned = await resolveStrategyVersions(context, loaded, this.policy);
        await recordStrategiesSeen(context, versioned.running);
        const summary = this.scheduler.apply(versioned.running);
        this.versioned = versioned;
        this.current = versioned.running;
        setStrategyIntervals(context.metrics, this.current, context.clock());
        result = {
          applied: true,
          strategies: this.current.map((s) => s.name),
          ...summary,
          waiting: [...this.versioned.waiting.keys()],
        };
        context.logger.info(summary, 'strategies reloaded');
      }
    } catch (error) {
      result = { applied: false, problems: [`${errorCodeOf(error)}: ${(error as Error).message}`] };
      context.logger.error({ err: error }, 'strategy reload failed; the previous strategies keep running');
    }
    for (const listener of this.reloadListeners) listener(result);
    return result;
  }
}
