import type { Logger } from '../observability/logger.js';

export interface PeriodicTaskOptions {
  name: string;
  intervalMs: number;
  /** One run; its resolved value `true` asks for the next run right away (more work is waiting). */
  run: (signal: AbortSignal) => Promise<boolean | undefined>;
  logger: Logger;
  /** First run right after start (default) or one interval later. */
  runAtStart?: boolean;
}

export interface PeriodicTask {
  start(): void;
  /** Aborts the run in flight and waits for it to end. Safe to call more than once. */
  stop(): Promise<void>;
  /** Runs now (after the run in flight, if any) and resolves when that run ends. */
  runNow(): Promise<void>;
}

/**
 * Runs a task every interval, never two runs at once. A failed run is logged and the schedule goes on:
 * one bad pass (the service or the database briefly away) must not stop tracking for good.
 */
export function createPeriodicTask(options: PeriodicTaskOptions): PeriodicTask {
  let timer: NodeJS.Timeout | undefined;
  let controller: AbortController | undefined;
  /** The run in flight (or a resolved promise): runs are chained so that two never overlap. */
  let tail: Promise<boolean> = Promise.resolve(false);
  let started = false;

  const runOnce = async (): Promise<boolean> => {
    const signal = controller?.signal ?? AbortSignal.abort();
    try {
      return (await options.run(signal)) === true;
    } catch (error) {
      if (!signal.aborted) options.logger.error({ err: error, task: options.name }, `${options.name} failed`);
      return false;
    }
  };
  const exclusive = () => {
    tail = tail.then(runOnce);
    return tail;
  };

  const loop = async () => {
    timer = undefined;
    const more = await exclusive();
    if (started && timer === undefined) timer = setTimeout(loop, more ? 0 : options.intervalMs);
  };

  return {
    start() {
      if (started) return;
      started = true;
      controller = new AbortController();
      timer = setTimeout(loop, options.runAtStart === false ? options.intervalMs : 0);
    },

    async stop() {
      started = false;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      controller?.abort(new Error(`${options.name} stopped`));
      await tail;
    },

    async runNow() {
      if (controller === undefined || controller.signal.aborted) controller = new AbortController();
      await exclusive();
    },
  };
}
