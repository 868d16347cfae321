/**
 * The one way the worker runs something on an interval: readiness checks, the replica heartbeat, the
 * maintenance pass, the kill-switch poll and every loop of settlement tracking. Each has the same stop
 * semantics, which is what lets the worker's shutdown be a list of stops in reverse order.
 */

/** What a failed scheduled run is reported to; the project's pino logger fits. */
export interface TaskLogger {
  error(fields: Record<string, unknown>, message: string): void;
}

export interface PeriodicTaskOptions<T> {
  name: string;
  intervalMs: number;
  /** One run. `signal` aborts when the task stops: a run waiting on the network must give up then. */
  run: (signal: AbortSignal) => Promise<T>;
  /** A result that asks for the next run right away (more work is waiting); default never. */
  again?: (result: T) => boolean;
  logger: TaskLogger;
  /** First run right after start (default) or one interval later. */
  runAtStart?: boolean;
}

export interface PeriodicTask<T> {
  /** Starts the schedule. Idempotent; a stopped task can be started again. */
  start(): void;
  /** Ends the schedule, aborts the run in flight through its signal and waits for it. Idempotent. */
  stop(): Promise<void>;
  /**
   * One run now, outside the schedule (a command, a test, the first pass at start): joins the run in
   * flight rather than doubling it, or else calls `run` before returning. Its failure rejects here instead
   * of being logged.
   */
  runNow(): Promise<T>;
}

/**
 * Runs a task every interval, never two runs at once. A failed scheduled run is logged and the schedule goes
 * on: one bad pass (the service or the database briefly away) must not stop the loop for good. A run cut
 * short by stop() is not a failure and is not logged.
 */
export function createPeriodicTask<T>(options: PeriodicTaskOptions<T>): PeriodicTask<T> {
  let timer: NodeJS.Timeout | undefined;
  let lifetime = new AbortController();
  let running: Promise<T> | undefined;
  let started = false;

  const runNow = (): Promise<T> => {
    if (running) return running;
    // A run asked for after a stop (the owner started again, or a command) must not start out aborted.
    if (lifetime.signal.aborted) lifetime = new AbortController();
    const signal = lifetime.signal;
    const run = options.run(signal).finally(() => {
      running = undefined;
    });
    running = run;
    return run;
  };

  const scheduled = async () => {
    timer = undefined;
    const signal = lifetime.signal;
    let more = false;
    try {
      const result = await runNow();
      more = options.again?.(result) ?? false;
    } catch (error) {
      if (!signal.aborted) options.logger.error({ err: error, task: options.name }, `${options.name} failed`);
    }
    if (started && timer === undefined) timer = setTimeout(scheduled, more ? 0 : options.intervalMs);
  };

  return {
    start() {
      if (started) return;
      started = true;
      if (lifetime.signal.aborted) lifetime = new AbortController();
      timer = setTimeout(scheduled, options.runAtStart === false ? options.intervalMs : 0);
    },

    async stop() {
      started = false;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      lifetime.abort(new Error(`${options.name} stopped`));
      await running?.catch(() => undefined);
    },

    runNow,
  };
}
