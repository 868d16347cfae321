/**
 * Fires cycles: node-cron tasks in the strategies' zones as the trigger (shared per schedule,
 * cron-triggers.ts); the slot itself comes from the clock (due-slots.ts), walked over the same parsed
 * expression node-cron was given; a periodic sweep runs slots node-cron missed. A slot is dispatched at
 * most once per process; across processes the unique claim decides, so double firing is harmless. Cycles
 * run through the bounded limiter. A schedule node-cron refuses is an error of the whole change
 * (ScheduleNotAddedError), never a strategy that silently stops firing.
 */
import type { CycleTrigger } from '../db/index.js';
import {
  type CronSchedule,
  isTarget,
  parseCron,
  type Strategy,
  slotInWindow,
  strategyHash,
} from '../strategy/index.js';
import { ClaimedElsewhere } from './claimed-elsewhere.js';
import type { Limiter } from './concurrency.js';
import type { EngineContext } from './context.js';
import { CronTriggers } from './cron-triggers.js';
import type { CycleRequest } from './cycle.js';
import { slotAtTick, slotsToSweep } from './due-slots.js';
import { withDatabase } from './engine-errors.js';
import type { CycleReport } from './outcomes.js';

export interface SchedulerOptions {
  context: EngineContext;
  limiter: Limiter;
  runCycle: (request: CycleRequest) => Promise<CycleReport>;
  /** Create node-cron tasks; false in tests that drive ticks and sweeps with a fake clock. */
  useCron?: boolean;
}

interface Entry {
  strategy: Strategy;
  hash: string;
  schedule: CronSchedule;
  /** The sweep never looks before the moment the strategy was (re)scheduled. */
  since: Date;
}

const MAX_SWEEP_SLOTS_PER_STRATEGY = 100;

export class Scheduler {
  private readonly entries = new Map<string, Entry>();
  /** Slots this process dispatched, by strategy, pruned as the sweep moves on. */
  private readonly dispatched = new Map<string, Set<number>>();
  private readonly inFlight = new Set<Promise<void>>();
  /** The last queued cycle of each strategy, which the next one waits for. */
  private readonly tails = new Map<string, Promise<void>>();
  private sweepTimer: NodeJS.Timeout | undefined;
  private sweptUntil: Date | undefined;
  private stopped = false;
  private readonly triggers: CronTriggers | undefined;
  /**
   * In a burst, the slots other replicas already claimed: their cycles are skipped without a claim. Not on an
   * embedded database, which no other process shares.
   */
  private readonly claimedElsewhere: ClaimedElsewhere | undefined;
  /** The slot of the last tick: the strategies on one trigger share it, so it is computed once per fire. */
  private lastTick:
    | { schedule: CronSchedule; timezone: string; at: number; slot: Date | undefined }
    | undefined;

  constructor(private readonly options: SchedulerOptions) {
    const { context } = options;
    const { clock, logger } = context;
    if (options.useCron !== false)
      this.triggers = new CronTriggers((name, now) => this.tick(name, now), logger, clock);
    if (context.database.kind === 'postgres')
      this.claimedElsewhere = new ClaimedElsewhere({
        read: (slot, strategies) =>
          withDatabase(context, 'read_claimed_slots', () =>
            context.database.cycles.claimedAmong(slot, strategies),
          ),
        logger,
      });
  }

  start(strategies: readonly Strategy[]): void {
    const { settings, clock } = this.options.context;
    this.sweptUntil = clock();
    this.apply(strategies);
    this.sweepTimer = setInterval(() => this.sweep(clock()), settings.catchUpIntervalMs);
  }

  /**
   * Schedules the enabled strategies of the new set; unchanged ones keep their task. All or nothing: a
   * schedule that cannot be scheduled throws (ScheduleNotAddedError, CronSyntaxError) and the running set
   * stays as it was.
   */
  apply(strategies: readonly Strategy[]): { added: string[]; changed: string[]; removed: string[] } {
    const summary = { added: [] as string[], changed: [] as string[], removed: [] as string[] };
    // A reload that finishes after the stop would start timers that keep a stopped process alive.
    if (this.stopped) return summary;
    const now = this.options.context.clock();
    const wanted = new Map(strategies.filter((s) => s.enabled).map((s) => [s.name, s]));
    const updates: Entry[] = [];
    for (const strategy of wanted.values()) {
      const hash = strategyHash(strategy);
      const existing = this.entries.get(strategy.name);
      if (existing?.hash === hash) continue;
      (existing ? summary.changed : summary.added).push(strategy.name);
      updates.push({ strategy, hash, schedule: parseCron(strategy.schedule), since: now });
    }
    this.triggers?.add(updates.map((entry) => entry.strategy));
    for (const entry of updates) this.entries.set(entry.strategy.name, entry);
    for (const name of this.entries.keys()) {
      if (!wanted.has(name)) {
        this.triggers?.remove(name);
        this.entries.delete(name);
        summary.removed.push(name);
      }
    }
    return summary;
  }

  /** A tick of the strategy's task: run the slot that is due now. */
  tick(name: string, now: Date): void {
    const entry = this.entries.get(name);
    if (!entry || this.stopped) return;
    const { schedule, strategy } = entry;
    const last = this.lastTick;
    const slot =
      last?.schedule === schedule && last.timezone === strategy.timezone && last.at === now.getTime()
        ? last.slot
        : slotAtTick(schedule, strategy.timezone, now);
    this.lastTick = { schedule, timezone: strategy.timezone, at: now.getTime(), slot };
    if (slot !== undefined) this.dispatch(strategy, slot, 'schedule');
  }

  /** Runs the slots of (last sweep, now − lag] that this process did not dispatch. */
  sweep(now: Date): void {
    if (this.stopped) return;
    const until = new Date(now.getTime() - this.options.context.settings.catchUpLagMs);
    const from = this.sweptUntil ?? until;
    for (const entry of this.entries.values()) {
      const after = from.getTime() > entry.since.getTime() ? from : entry.since;
      for (const slot of slotsToSweep(
        entry.schedule,
        entry.strategy.timezone,
        after,
        until,
        MAX_SWEEP_SLOTS_PER_STRATEGY,
      )) {
        if (this.dispatch(entry.strategy, slot, 'schedule')) {
          this.options.context.logger.info(
            { strategy: entry.strategy.name, slot },
            'catch-up sweep runs a slot the schedule did not fire',
          );
        }
      }
    }
    if (until.getTime() > from.getTime()) this.sweptUntil = until;
    this.prune(from);
  }

  /** Queues one cycle unless this process already dispatched that slot; true when queued. */
  dispatch(strategy: Strategy, slot: Date, trigger: CycleTrigger): boolean {
    if (this.stopped) return false;
    // A target's slots outside its window are no slots of it: nothing is claimed or recorded for them.
    if (isTarget(strategy) && !slotInWindow(strategy, slot)) return false;
    let slots = this.dispatched.get(strategy.name);
    if (!slots) {
      slots = new Set();
      this.dispatched.set(strategy.name, slots);
    }
    if (slots.has(slot.getTime())) return false;
    slots.add(slot.getTime());
    this.claimedElsewhere?.queued(strategy.name, slot);
    const { runCycle, context } = this.options;
    void this.enqueue(strategy, slot, async () => {
      // Not our cycle, like a lost claim (announce.ts): logged at debug, counted nowhere.
      if (this.claimedElsewhere?.started(strategy.name, slot))
        context.logger.debug({ strategy: strategy.name, slot }, 'slot claimed elsewhere: no claim sent');
      else await runCycle({ strategy, slot, trigger });
    });
    return true;
  }

  /**
   * One cycle a person asked for now (the REST API's `once`), queued behind the strategy's own cycles like a
   * scheduled one and drained by stop; resolves with its report, or undefined when the stop came first. The
   * claim, not this process's memory of its dispatches, decides whether the slot is still to buy.
   */
  runNow(strategy: Strategy, slot: Date, trigger: CycleTrigger): Promise<CycleReport | undefined> {
    if (this.stopped) return Promise.resolve(undefined);
    return this.enqueue(strategy, slot, () => this.options.runCycle({ strategy, slot, trigger }));
  }

  /** Runs `work` after the strategy's queued cycles, within the limiter, unless the scheduler stopped first. */
  private enqueue<T>(strategy: Strategy, slot: Date, work: () => Promise<T>): Promise<T | undefined> {
    const { limiter, context } = this.options;
    // Cycles of one strategy run one after the other in this process, so each sees what the previous one
    // spent before its budget and cooldown checks.
    const previous = this.tails.get(strategy.name) ?? Promise.resolve();
    const result = previous.then(() =>
      // Queued cycles that had not started when the worker began to stop are dropped: nothing claimed yet.
      limiter.run(async () => (this.stopped ? undefined : work())),
    );
    const running: Promise<void> = result
      .then(
        () => undefined,
        (error: unknown) => {
          context.logger.error(
            { strategy: strategy.name, slot, err: error },
            'cycle crashed outside its own handling',
          );
        },
      )
      .finally(() => {
        this.inFlight.delete(running);
        if (this.tails.get(strategy.name) === running) this.tails.delete(strategy.name);
      });
    this.inFlight.add(running);
    this.tails.set(strategy.name, running);
    return result;
  }

  /** Resolves once the cycles dispatched so far have finished. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }

  get size(): number {
    return this.entries.size;
  }

  /** Stops firing and drops queued cycles; resolves true when the running ones finished within `drainMs`. */
  async stop(drainMs: number): Promise<boolean> {
    this.stopped = true;
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    await this.triggers?.destroyAll();
    this.entries.clear();
    let timer: NodeJS.Timeout | undefined;
    const drained = Promise.allSettled([...this.inFlight]).then(() => true);
    const timedOut = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), drainMs);
    });
    const result = await Promise.race([drained, timedOut]);
    clearTimeout(timer);
    return result;
  }

  private prune(before: Date): void {
    const limit = before.getTime() - 3_600_000;
    for (const slots of this.dispatched.values()) {
      for (const slot of slots) if (slot < limit) slots.delete(slot);
    }
  }
}
