import { afterEach, describe, expect, it, vi } from 'vitest';
import { backoffDelayMs } from '../../src/runtime/backoff.js';
import { createPeriodicTask } from '../../src/runtime/periodic-task.js';
import { startTimeLimit, withTimeLimit } from '../../src/runtime/time-limit.js';

/**
 * The shared periodic task, backoff and time limit (src/runtime): every loop, retry and bounded call of the
 * worker relies on them.
 */

function recordingLogger() {
  const errors: { fields: Record<string, unknown>; message: string }[] = [];
  return {
    errors,
    error: (fields: Record<string, unknown>, message: string) => errors.push({ fields, message }),
  };
}

/** A run that waits until its signal aborts, the way a request to a silent service does. */
function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((_, reject) =>
    signal.addEventListener('abort', () => reject(signal.reason), { once: true }),
  );
}

describe('periodic task', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('runs at start, then one interval after each run ends, never two at once', async () => {
    vi.useFakeTimers();
    let runs = 0;
    let concurrent = 0;
    let most = 0;
    const task = createPeriodicTask({
      name: 'count',
      intervalMs: 100,
      logger: recordingLogger(),
      run: async () => {
        runs += 1;
        most = Math.max(most, ++concurrent);
        await new Promise((resolve) => setTimeout(resolve, 50));
        concurrent -= 1;
      },
    });
    task.start();
    task.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(runs).toBe(1);
    const joined = task.runNow();
    await vi.advanceTimersByTimeAsync(149);
    expect(runs).toBe(1);
    await joined;
    await vi.advanceTimersByTimeAsync(1);
    expect(runs).toBe(2);
    expect(most).toBe(1);
    // The run in flight ignores its signal: stop waits for it to end.
    let stopped = false;
    const stopping = task.stop().then(() => {
      stopped = true;
    });
    await vi.advanceTimersByTimeAsync(49);
    expect(stopped).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await stopping;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(runs).toBe(2);
  });

  it('stop aborts the run in flight through its signal and waits for it; a second stop is harmless', async () => {
    const logger = recordingLogger();
    let ended = false;
    const task = createPeriodicTask({
      name: 'silent',
      intervalMs: 60_000,
      logger,
      run: async (signal) => {
        await untilAborted(signal).finally(() => {
          ended = true;
        });
      },
    });
    const started = new Promise<void>((resolve) => {
      task.start();
      setTimeout(resolve, 5);
    });
    await started;
    await task.stop();
    expect(ended).toBe(true);
    await task.stop();
    // Cut short by stop, not failed: nothing to alert on.
    expect(logger.errors).toEqual([]);
  });

  it('starts again after a stop with a fresh signal', async () => {
    const seen: boolean[] = [];
    const task = createPeriodicTask({
      name: 'restart',
      intervalMs: 60_000,
      logger: recordingLogger(),
      run: async (signal) => {
        seen.push(signal.aborted);
      },
    });
    await task.runNow();
    await task.stop();
    await task.runNow();
    expect(seen).toEqual([false, false]);
  });

  it('logs a failed scheduled run and goes on; runNow rejects with the failure instead', async () => {
    vi.useFakeTimers();
    const logger = recordingLogger();
    let runs = 0;
    const task = createPeriodicTask({
      name: 'flaky',
      intervalMs: 100,
      logger,
      runAtStart: false,
      run: async () => {
        runs += 1;
        throw new Error(`failure ${runs}`);
      },
    });
    task.start();
    await vi.advanceTimersByTimeAsync(99);
    expect(runs).toBe(0);
    await vi.advanceTimersByTimeAsync(101);
    expect(runs).toBe(2);
    expect(logger.errors.map((entry) => entry.message)).toEqual(['flaky failed', 'flaky failed']);
    expect(logger.errors[0]?.fields).toMatchObject({ task: 'flaky' });
    await expect(task.runNow()).rejects.toThrow('failure 3');
    await task.stop();
  });

  it('runs again at once while a run says more work is waiting', async () => {
    vi.useFakeTimers();
    const backlog = [3, 3, 1];
    const task = createPeriodicTask({
      name: 'batches',
      intervalMs: 10_000,
      logger: recordingLogger(),
      run: async () => backlog.shift() ?? 0,
      again: (batch) => batch >= 3,
    });
    task.start();
    await vi.advanceTimersByTimeAsync(5);
    expect(backlog).toEqual([]);
    await task.stop();
  });
});

describe('backoff', () => {
  const settings = { baseMs: 100, maxMs: 1_000 };

  it('doubles per attempt up to the cap, between half and all of the window', () => {
    expect([1, 2, 3, 4, 5].map((attempt) => backoffDelayMs(attempt, settings, () => 0))).toEqual([
      50, 100, 200, 400, 500,
    ]);
    expect([1, 2, 3, 4, 5].map((attempt) => backoffDelayMs(attempt, settings, () => 1))).toEqual([
      100, 200, 400, 800, 1_000,
    ]);
  });

  it('stays finite and in bounds for any attempt count', () => {
    expect(backoffDelayMs(0, settings, () => 1)).toBe(100);
    expect(backoffDelayMs(10_000, settings, () => 1)).toBe(1_000);
    expect(backoffDelayMs(10_000, { baseMs: 1, maxMs: Number.MAX_SAFE_INTEGER }, () => 0)).toBe(2 ** 29);
  });
});

describe('time limit', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('aborts with a TimeoutError when the limit passes', async () => {
    vi.useFakeTimers();
    const limit = startTimeLimit(1_000);
    vi.advanceTimersByTime(999);
    expect(limit.signal.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(limit.signal.aborted).toBe(true);
    expect((limit.signal.reason as DOMException).name).toBe('TimeoutError');
  });

  it('leaves no timer behind once the call is over', async () => {
    vi.useFakeTimers();
    const answer = await withTimeLimit(5_000, async (signal) => (signal.aborted ? 'aborted' : 'answered'));
    expect(answer).toBe('answered');
    expect(vi.getTimerCount()).toBe(0);
    const limit = startTimeLimit(5_000);
    limit.release();
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(10_000);
    expect(limit.signal.aborted).toBe(false);
  });

  it("follows its parent's abort, and lets go of the parent when released", async () => {
    const parent = new AbortController();
    const limit = startTimeLimit(60_000, parent.signal);
    parent.abort(new Error('stopping'));
    expect(limit.signal.aborted).toBe(true);
    expect((limit.signal.reason as Error).message).toBe('stopping');
    limit.release();

    const released = new AbortController();
    const other = startTimeLimit(60_000, released.signal);
    other.release();
    released.abort();
    expect(other.signal.aborted).toBe(false);

    const gone = new AbortController();
    gone.abort(new Error('already'));
    const late = startTimeLimit(60_000, gone.signal);
    expect((late.signal.reason as Error).message).toBe('already');
    late.release();
  });
});
