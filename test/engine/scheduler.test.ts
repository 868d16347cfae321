import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { type CycleRequest, createLimiter, type EngineContext, Scheduler } from '../../src/engine/index.js';
import { createLogger } from '../../src/observability/logger.js';
import { engineSettings, type LogLine, strategy } from './support/harness.js';

const CATCH_UP_LINE = 'catch-up sweep runs a slot the schedule did not fire';

/**
 * The scheduler's context is only its settings, clock and logger, and a database that no other process
 * shares (so that no read of slots claimed elsewhere is ever made); the logger's lines are kept to assert on.
 */
function schedulerContext(clock: () => Date, lines: LogLine[], settings = engineSettings()): EngineContext {
  const logger = createLogger({
    level: 'debug',
    destination: new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line) as LogLine);
        done();
      },
    }),
  });
  const database = { kind: 'pglite' } as EngineContext['database'];
  return { settings, clock, logger, database } as Pick<
    EngineContext,
    'settings' | 'clock' | 'logger' | 'database'
  > as EngineContext;
}

/**
 * Schedule logic with a fake clock: the scheduler is driven by explicit ticks and sweeps (node-cron off);
 * the cycles it dispatches are collected instead of run. With `hold`, each cycle stays running until the
 * test releases it, so that others queue behind it.
 */
function fakeScheduler(start: string, options: { limit?: number; hold?: boolean } = {}) {
  let now = Date.parse(start);
  const dispatched: CycleRequest[] = [];
  const lines: LogLine[] = [];
  const gates = new Map<string, () => void>();
  const starts = new Map<string, () => void>();
  const key = (request: CycleRequest) => `${request.strategy.name}@${request.slot.toISOString()}`;
  const limiter = createLimiter(options.limit ?? 4);
  const scheduler = new Scheduler({
    context: schedulerContext(() => new Date(now), lines, engineSettings({ catchUpLagMs: 2_000 })),
    limiter,
    runCycle: async (request) => {
      dispatched.push(request);
      starts.get(key(request))?.();
      if (options.hold) await new Promise<void>((resolve) => gates.set(key(request), resolve));
      return {} as never;
    },
    useCron: false,
  });
  return {
    scheduler,
    limiter,
    dispatched,
    lines,
    at: (iso: string) => {
      now = Date.parse(iso);
      return new Date(now);
    },
    slots: () => dispatched.map(key),
    /** Resolves once the cycle of `strategy@slot` has started. */
    started: (slot: string) =>
      dispatched.some((request) => key(request) === slot)
        ? Promise.resolve()
        : new Promise<void>((resolve) => starts.set(slot, resolve)),
    release: (slot: string) => gates.get(slot)!(),
    /** Every cycle dispatched so far has finished (or was dropped). */
    settle: () => scheduler.settled(),
    /** One turn of the event loop: promise chains already under way have moved as far as they can. */
    flush: () => new Promise((resolve) => setImmediate(resolve)),
  };
}

describe('scheduler', () => {
  it('takes the slot from the clock at tick time (latest slot at or before now), once per process', async () => {
    const fake = fakeScheduler('2030-03-04T09:59:00Z');
    const daily = strategy({ name: 'daily', schedule: '0 10 * * *', timezone: 'UTC' });
    fake.scheduler.start([daily]);
    // node-cron fires late (a busy event loop): still the 10:00 slot.
    fake.scheduler.tick('daily', fake.at('2030-03-04T10:00:00.750Z'));
    fake.scheduler.tick('daily', fake.at('2030-03-04T10:00:01.100Z'));
    await fake.settle();
    expect(fake.slots()).toEqual(['daily@2030-03-04T10:00:00.000Z']);
    await fake.scheduler.stop(1_000);
  });

  it('computes slots in the strategy’s zone', async () => {
    const fake = fakeScheduler('2030-07-01T12:00:00Z');
    const saoPaulo = strategy({ name: 'sp', schedule: '0 10 * * 1-5', timezone: 'America/Sao_Paulo' });
    fake.scheduler.start([saoPaulo]);
    fake.scheduler.tick('sp', fake.at('2030-07-01T13:00:00.020Z'));
    await fake.settle();
    expect(fake.slots()).toEqual(['sp@2030-07-01T13:00:00.000Z']);
    await fake.scheduler.stop(1_000);
  });

  it('catches up, in a sweep, a slot node-cron never fired (the DST gap: 02:30 New York on spring-forward day)', async () => {
    const fake = fakeScheduler('2030-03-10T06:00:00Z'); // 01:00 EST, the night clocks jump from 02:00 to 03:00
    const gap = strategy({ name: 'gap', schedule: '30 2 * * *', timezone: 'America/New_York' });
    fake.scheduler.start([gap]);
    fake.scheduler.sweep(fake.at('2030-03-10T07:30:00Z')); // 03:30 EDT: no tick came
    await fake.settle();
    // The 02:30 reading does not exist that day; it is due at the first instant after the gap, 03:00 EDT.
    expect(fake.slots()).toEqual(['gap@2030-03-10T07:00:00.000Z']);
    fake.scheduler.sweep(fake.at('2030-03-10T08:00:00Z'));
    await fake.settle();
    expect(fake.dispatched).toHaveLength(1);
    await fake.scheduler.stop(1_000);
  });

  it('sweeps only slots older than the lag and never re-dispatches what a tick already ran', async () => {
    const fake = fakeScheduler('2030-01-01T00:00:00Z');
    const everySecond = strategy({ name: 'each-second', schedule: '* * * * * *' });
    fake.scheduler.start([everySecond]);
    fake.scheduler.tick('each-second', fake.at('2030-01-01T00:00:01.010Z'));
    fake.scheduler.tick('each-second', fake.at('2030-01-01T00:00:03.010Z')); // the tick of :02 was lost
    fake.scheduler.sweep(fake.at('2030-01-01T00:00:04.500Z')); // lag 2 s: looks at (0, 02.5]
    await fake.settle();
    expect(fake.slots()).toEqual([
      'each-second@2030-01-01T00:00:01.000Z',
      'each-second@2030-01-01T00:00:03.000Z',
      'each-second@2030-01-01T00:00:02.000Z',
    ]);
    // Operators see which slot the sweep had to run, and only that one.
    expect(fake.lines.filter((line) => line.msg === CATCH_UP_LINE)).toMatchObject([
      { strategy: 'each-second', slot: '2030-01-01T00:00:02.000Z' },
    ]);
    await fake.scheduler.stop(1_000);
  });

  it('applies a changed set: new strategies scheduled, removed ones no longer fire, disabled ones never', async () => {
    const fake = fakeScheduler('2030-01-01T00:00:00Z');
    fake.scheduler.start([strategy({ name: 'a' }), strategy({ name: 'off', enabled: false })]);
    expect(fake.scheduler.size).toBe(1);
    const summary = fake.scheduler.apply([
      strategy({ name: 'b' }),
      strategy({ name: 'a', schedule: '*/2 * * * * *' }),
    ]);
    expect(summary).toEqual({ added: ['b'], changed: ['a'], removed: [] });
    expect(fake.scheduler.apply([strategy({ name: 'b' })])).toEqual({
      added: [],
      changed: [],
      removed: ['a'],
    });
    fake.scheduler.tick('a', fake.at('2030-01-01T00:00:05Z'));
    fake.scheduler.tick('b', fake.at('2030-01-01T00:00:05Z'));
    await fake.settle();
    expect(fake.slots()).toEqual(['b@2030-01-01T00:00:05.000Z']);
    await fake.scheduler.stop(1_000);
  });

  it('drops cycles queued behind a busy limiter or their strategy’s running cycle once stopping, and dispatches nothing after', async () => {
    const fake = fakeScheduler('2030-01-01T00:00:00Z', { limit: 1, hold: true });
    const busy = strategy({ name: 'busy' });
    fake.scheduler.start([busy, strategy({ name: 'waiting' })]);
    fake.scheduler.tick('busy', fake.at('2030-01-01T00:00:01.010Z'));
    await fake.started('busy@2030-01-01T00:00:01.000Z');
    // The one place of the limiter is taken: `waiting` queues there, busy's next slot behind its own cycle.
    fake.scheduler.tick('waiting', fake.at('2030-01-01T00:00:01.020Z'));
    fake.scheduler.tick('busy', fake.at('2030-01-01T00:00:02.010Z'));
    await fake.flush();
    expect(fake.limiter.queued).toBe(1);
    expect(fake.slots()).toEqual(['busy@2030-01-01T00:00:01.000Z']);

    const stopped = fake.scheduler.stop(5_000);
    fake.release('busy@2030-01-01T00:00:01.000Z');
    const drained = await stopped;
    expect(fake.slots()).toEqual(['busy@2030-01-01T00:00:01.000Z']);
    expect(drained).toBe(true);
    expect(fake.limiter.queued).toBe(0);

    expect(fake.scheduler.dispatch(busy, new Date('2030-01-01T00:00:05Z'), 'schedule')).toBe(false);
    fake.scheduler.tick('busy', fake.at('2030-01-01T00:00:09.010Z'));
    fake.scheduler.sweep(fake.at('2030-01-01T00:00:30Z'));
    await fake.settle();
    expect(fake.slots()).toEqual(['busy@2030-01-01T00:00:01.000Z']);
    expect(fake.lines.filter((line) => line.level !== 'debug' && line.level !== 'info')).toEqual([]);
  });
});

describe('cycles of one strategy', () => {
  it('run one after the other in a process (each sees what the previous spent), other strategies in parallel', async () => {
    const events: string[] = [];
    const gates = new Map<string, () => void>();
    const lines: LogLine[] = [];
    const scheduler = new Scheduler({
      context: schedulerContext(() => new Date('2030-01-01T00:00:00Z'), lines),
      limiter: createLimiter(8),
      runCycle: async ({ strategy: s, slot }) => {
        const key = `${s.name}@${slot.getUTCSeconds()}`;
        events.push(`start ${key}`);
        await new Promise<void>((resolve) => gates.set(key, resolve));
        events.push(`end ${key}`);
        return {} as never;
      },
      useCron: false,
    });
    const a = strategy({ name: 'a' });
    const b = strategy({ name: 'b' });
    scheduler.dispatch(a, new Date('2030-01-01T00:00:01Z'), 'schedule');
    scheduler.dispatch(a, new Date('2030-01-01T00:00:02Z'), 'schedule');
    scheduler.dispatch(b, new Date('2030-01-01T00:00:01Z'), 'schedule');
    const settle = () => new Promise((resolve) => setImmediate(resolve));
    await settle();
    expect(events).toEqual(['start a@1', 'start b@1']);
    gates.get('a@1')!();
    await settle();
    expect(events).toEqual(['start a@1', 'start b@1', 'end a@1', 'start a@2']);
    gates.get('a@2')!();
    gates.get('b@1')!();
    expect(await scheduler.stop(1_000)).toBe(true);
    expect(events.slice(4)).toEqual(['end a@2', 'end b@1']);
    expect(lines.filter((line) => line.level === 'error')).toEqual([]);
  });

  it('refuses a set with a schedule node-cron cannot run, as an error, and keeps the running set', async () => {
    const lines: LogLine[] = [];
    const scheduler = new Scheduler({
      context: schedulerContext(() => new Date(), lines),
      limiter: createLimiter(1),
      runCycle: async () => ({}) as never,
    });
    const good = strategy({ name: 'good', schedule: '0 10 * * *', timezone: 'UTC' });
    scheduler.start([good]);
    try {
      const moved = strategy({ name: 'good', schedule: '0 11 * * *', timezone: 'UTC' });
      const bad = strategy({ name: 'bad', schedule: '0 10 * * *', timezone: 'Mars/Olympus' });
      expect(() => scheduler.apply([moved, bad])).toThrow(
        expect.objectContaining({ code: 'SCHEDULE_NOT_ADDED', message: expect.stringMatching(/"bad"/) }),
      );
      expect(scheduler.size).toBe(1);
      // Nothing of the refused set was applied: the same set again still counts `good` as changed.
      expect(scheduler.apply([moved]).changed).toEqual(['good']);
    } finally {
      await scheduler.stop(1_000);
    }
  });
});
