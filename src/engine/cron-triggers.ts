/**
 * The node-cron tasks that trigger the scheduler: one task per distinct (schedule, time zone), shared by
 * every strategy on it. A tick only says "look now"; the slot comes from the clock (due-slots.ts), so a
 * shared task loses nothing, and 10,000 strategies on a handful of schedules cost a handful of timers
 * rather than 10,000 (each node-cron task holds about 3 KB of heap and a timer of its own).
 */
import cron, { type ScheduledTask } from 'node-cron';
import type { Logger } from '../observability/logger.js';
import type { Strategy } from '../strategy/index.js';

interface Trigger {
  task: ScheduledTask;
  strategies: Set<string>;
}

export class CronTriggers {
  private readonly triggers = new Map<string, Trigger>();
  /** Strategy name → key of the trigger it is on. */
  private readonly keyOf = new Map<string, string>();

  constructor(
    private readonly onTick: (strategyName: string) => void,
    private readonly logger: Logger,
  ) {}

  /** Puts the strategy on its schedule's trigger (off any previous one); false if node-cron refused it. */
  add(strategy: Strategy): boolean {
    this.remove(strategy.name);
    const key = `${strategy.timezone} ${strategy.schedule}`;
    let trigger = this.triggers.get(key);
    if (!trigger) {
      const task = this.createTask(strategy, key);
      if (!task) return false;
      trigger = { task, strategies: new Set() };
      this.triggers.set(key, trigger);
    }
    trigger.strategies.add(strategy.name);
    this.keyOf.set(strategy.name, key);
    return true;
  }

  remove(name: string): void {
    const key = this.keyOf.get(name);
    if (key === undefined) return;
    this.keyOf.delete(name);
    const trigger = this.triggers.get(key)!;
    trigger.strategies.delete(name);
    if (trigger.strategies.size === 0) {
      this.triggers.delete(key);
      void trigger.task.destroy();
    }
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

  private createTask(strategy: Strategy, key: string): ScheduledTask | undefined {
    const { logger } = this;
    const context = { schedule: strategy.schedule, timezone: strategy.timezone };
    try {
      const task = cron.createTask(strategy.schedule, () => this.fire(key), {
        name: key,
        timezone: strategy.timezone,
        logger: {
          info: (message) => logger.debug(context, `node-cron: ${message}`),
          warn: (message) => logger.debug(context, `node-cron: ${message}`),
          error: (message, err) => logger.warn({ ...context, err }, `node-cron: ${String(message)}`),
          debug: (message) => logger.trace(context, `node-cron: ${String(message)}`),
        },
      });
      void task.start();
      return task;
    } catch (error) {
      // One schedule node-cron cannot run must not stop the others.
      logger.error({ strategy: strategy.name, ...context, err: error }, 'strategy could not be scheduled');
      return undefined;
    }
  }

  private fire(key: string): void {
    for (const name of this.triggers.get(key)?.strategies ?? []) this.onTick(name);
  }
}
