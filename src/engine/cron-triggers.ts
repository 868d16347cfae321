/**
 * The node-cron tasks that trigger the scheduler: one task per distinct (schedule, time zone), shared by
 * every strategy on it. A tick only says "look now"; the slot comes from the clock (due-slots.ts), so a
 * shared task loses nothing, and 10,000 strategies on a handful of schedules cost a handful of timers
 * rather than 10,000 (each node-cron task holds about 3 KB of heap and a timer of its own). node-cron is
 * given the text of the same parsed expression the slot calculator walks.
 */
import cron, { type ScheduledTask } from 'node-cron';
import type { Logger } from '../observability/logger.js';
import { type CronSchedule, parseCron, type Strategy } from '../strategy/index.js';

/** A schedule node-cron refused: the strategy would never fire, so nothing of the change is applied. */
export class ScheduleNotAddedError extends Error {
  override readonly name = 'ScheduleNotAddedError';
  readonly code = 'SCHEDULE_NOT_ADDED';
  constructor(strategy: Strategy, cause: unknown) {
    super(
      `strategy "${strategy.name}": schedule "${strategy.schedule}" in time zone "${strategy.timezone}" cannot be scheduled: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
  }
}

interface Trigger {
  task: ScheduledTask;
  strategies: Set<string>;
}

export class CronTriggers {
  private readonly triggers = new Map<string, Trigger>();
  /** Strategy name → key of the trigger it is on. */
  private readonly keyOf = new Map<string, string>();

  constructor(
    private readonly onTick: (strategyName: string, now: Date) => void,
    private readonly logger: Logger,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /**
   * Puts each strategy on its schedule's trigger (off any previous one). All or nothing: when node-cron
   * refuses one schedule, ScheduleNotAddedError is thrown and no strategy moves.
   */
  add(strategies: readonly Strategy[]): void {
    const created = new Map<string, Trigger>();
    for (const strategy of strategies) {
      const key = triggerKey(strategy);
      if (this.triggers.has(key) || created.has(key)) continue;
      try {
        created.set(key, {
          task: this.createTask(parseCron(strategy.schedule), strategy, key),
          strategies: new Set(),
        });
      } catch (error) {
        for (const trigger of created.values()) destroyQuietly(trigger.task);
        throw new ScheduleNotAddedError(strategy, error);
      }
    }
    for (const [key, trigger] of created) this.triggers.set(key, trigger);
    for (const strategy of strategies) {
      this.detach(strategy.name);
      const key = triggerKey(strategy);
      this.triggers.get(key)!.strategies.add(strategy.name);
      this.keyOf.set(strategy.name, key);
    }
    this.dropUnused();
  }

  remove(name: string): void {
    this.detach(name);
    this.dropUnused();
  }

  async destroyAll(): Promise<void> {
    const tasks = [...this.triggers.values()].map((trigger) => trigger.task);
    this.triggers.clear();
    this.keyOf.clear();
    await Promise.all(tasks.map((task) => task.destroy()));
  }

  /** Distinct node-cron tasks running. */
  get size(): number {
    return this.triggers.size;
  }

  private detach(name: string): void {
    const key = this.keyOf.get(name);
    if (key === undefined) return;
    this.keyOf.delete(name);
    this.triggers.get(key)?.strategies.delete(name);
  }

  private dropUnused(): void {
    for (const [key, trigger] of this.triggers) {
      if (trigger.strategies.size > 0) continue;
      this.triggers.delete(key);
      void trigger.task.destroy();
    }
  }

  private createTask(schedule: CronSchedule, strategy: Strategy, key: string): ScheduledTask {
    const { logger } = this;
    const context = { schedule: schedule.text, timezone: strategy.timezone };
    const task = cron.createTask(schedule.text, () => this.fire(key), {
      name: key,
      timezone: strategy.timezone,
      logger: {
        info: (message) => logger.debug(context, `node-cron: ${message}`),
        warn: (message) => logger.debug(context, `node-cron: ${message}`),
        error: (message, err) => logger.warn({ ...context, err }, `node-cron: ${String(message)}`),
        debug: (message) => logger.trace(context, `node-cron: ${String(message)}`),
      },
    });
    try {
      // node-cron checks the time zone only here, by throwing.
      void task.start();
    } catch (error) {
      destroyQuietly(task);
      throw error;
    }
    return task;
  }

  /**
   * One instant for every strategy on the trigger: they share the slot, computed once (due-slots.ts). In
   * an order of this fire's own: replicas that queue a burst in the same order claim the same slots at the
   * same moment and lose two of every three claims; in orders of their own they work apart, and each
   * learns in bulk what the others took before its turn comes (claimed-elsewhere.ts).
   */
  private fire(key: string): void {
    const now = this.clock();
    const names = [...(this.triggers.get(key)?.strategies ?? [])];
    for (const name of shuffled(names)) this.onTick(name, now);
  }
}

/** Fisher-Yates, in place. */
function shuffled<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

function triggerKey(strategy: Strategy): string {
  return `${strategy.timezone} ${strategy.schedule}`;
}

/** A task whose start failed may throw again on destroy (node-cron re-checks the zone). */
function destroyQuietly(task: ScheduledTask): void {
  try {
    void Promise.resolve(task.destroy()).catch(() => undefined);
  } catch {
    // Nothing was started; nothing to undo.
  }
}
