import { describe, expect, it } from 'vitest';
import { createLimiter, type EngineContext, Scheduler } from '../../src/engine/index.js';
import { createLogger } from '../../src/observability/logger.js';
import { engineSettings, strategy } from './support/harness.js';

/**
 * The graceful stop of the schedule: the cycle under way finishes (its order may be in flight), the cycle
 * still queued behind the concurrency bound never starts, and the wait is bounded by the drain time. The
 * cycles are gated promises, so each phase is awaited rather than slept through.
 */
function gatedScheduler(limit: number) {
  const started: string[] = [];
  const finished: string[] = [];
  const gates = new Map<string, () => void>();
  // The scheduler reads only these parts of the context (of the database, that no other process shares it).
  const context = {
    settings: engineSettings(),
    clock: () => new Date('2030-01-01T00:00:00Z'),
    logger: createLogger({ level: 'silent' }),
    database: { kind: 'pglite' } as EngineContext['database'],
  } as Pick<EngineContext, 'settings' | 'clock' | 'logger' | 'database'> as EngineContext;
  const scheduler = new Scheduler({
    context,
    limiter: createLimiter(limit),
    runCycle: async ({ strategy: { name } }) => {
      started.push(name);
      await new Promise<void>((resolve) => gates.set(name, resolve));
      finished.push(name);
      return {} as never;
    },
    useCron: false,
  });
  const dispatch = (name: string) =>
    scheduler.dispatch(strategy({ name }), new Date('2030-01-01T00:00:00Z'), 'schedule');
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  return { scheduler, started, finished, gates, dispatch, settle };
}

describe('stopping the schedule', () => {
  it('lets the running cycle finish and drops the one queued behind it', async () => {
    const fake = gatedScheduler(1);
    fake.dispatch('running');
    fake.dispatch('queued');
    await fake.settle();
    expect(fake.started).toEqual(['running']);

    const stopped = fake.scheduler.stop(60_000);
    let done = false;
    void stopped.then(() => {
      done = true;
    });
    await fake.settle();
    expect(done).toBe(false);
    fake.gates.get('running')!();
    expect(await stopped).toBe(true);
    expect(fake.finished).toEqual(['running']);
    await fake.settle();
    expect(fake.started).toEqual(['running']);
  });

  it('gives up waiting after the drain time and says so', async () => {
    const fake = gatedScheduler(1);
    fake.dispatch('endless');
    await fake.settle();
    const began = performance.now();
    expect(await fake.scheduler.stop(50)).toBe(false);
    expect(performance.now() - began).toBeLessThan(1_000);
    fake.gates.get('endless')!();
  });

  it('schedules nothing from a reload that lands after the stop', async () => {
    const fake = gatedScheduler(1);
    fake.scheduler.start([strategy({ name: 'before' })]);
    await fake.scheduler.stop(1_000);
    expect(fake.scheduler.apply([strategy({ name: 'after' })])).toEqual({
      added: [],
      changed: [],
      removed: [],
    });
    expect(fake.scheduler.size).toBe(0);
  });
});
