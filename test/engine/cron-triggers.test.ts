import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CronTriggers, ScheduleNotAddedError } from '../../src/engine/cron-triggers.js';
import { dca } from '../strategy/strategy-builders.js';

/** node-cron itself, on vitest's fake timers and fake Date: which strategies each shared task wakes. */
describe('cron triggers', () => {
  const ticks: string[] = [];
  let triggers: CronTriggers;

  beforeEach(() => {
    vi.useFakeTimers({ now: Date.parse('2030-03-04T09:59:59.500Z') });
    ticks.length = 0;
    triggers = new CronTriggers((name) => ticks.push(name), pino({ enabled: false }));
  });
  afterEach(async () => {
    await triggers.destroyAll();
    vi.useRealTimers();
  });

  it('shares one task per schedule and zone, and wakes every strategy on it', async () => {
    triggers.add([dca({ name: 'a', schedule: '* * * * * *', timezone: 'UTC' })]);
    triggers.add([dca({ name: 'b', schedule: '* * * * * *', timezone: 'UTC' })]);
    triggers.add([dca({ name: 'c', schedule: '* * * * * *', timezone: 'America/Sao_Paulo' })]);
    triggers.add([dca({ name: 'd', schedule: '0 10 * * *', timezone: 'UTC' })]);
    expect(triggers.size).toBe(3);

    await vi.advanceTimersByTimeAsync(1_000);
    expect(ticks.sort()).toEqual(['a', 'b', 'c', 'd']);
  });

  it('wakes the strategies of a shared task once each, in an order of its own at each fire', async () => {
    const names = Array.from({ length: 50 }, (_, index) => `s${index}`);
    triggers.add(names.map((name) => dca({ name, schedule: '* * * * * *', timezone: 'UTC' })));

    await vi.advanceTimersByTimeAsync(1_000);
    const first = ticks.splice(0);
    await vi.advanceTimersByTimeAsync(1_000);
    const second = ticks.splice(0);
    expect([...first].sort()).toEqual([...names].sort());
    expect([...second].sort()).toEqual([...names].sort());
    // Replicas queueing a burst in one shared order would race for the same slots (claimed-elsewhere.ts).
    // Two fires of 50 in the order they were added, or in one same order, come by chance once in 50!.
    expect(first).not.toEqual(names);
    expect(second).not.toEqual(first);
  });

  it('moves a changed strategy to its new schedule and drops a task nobody is on', async () => {
    triggers.add([dca({ name: 'a', schedule: '0 10 * * *', timezone: 'UTC' })]);
    triggers.add([dca({ name: 'b', schedule: '0 10 * * *', timezone: 'UTC' })]);
    triggers.add([dca({ name: 'a', schedule: '0 11 * * *', timezone: 'UTC' })]);
    expect(triggers.size).toBe(2);
    triggers.remove('b');
    expect(triggers.size).toBe(1);

    await vi.advanceTimersByTimeAsync(1_000);
    expect(ticks).toEqual([]);
    await vi.advanceTimersByTimeAsync(3_600_000);
    expect(ticks).toEqual(['a']);
  });

  it('refuses a schedule node-cron cannot run, as an error that moves no strategy', async () => {
    triggers.add([dca({ name: 'good', schedule: '* * * * * *', timezone: 'UTC' })]);
    const refused = () =>
      triggers.add([
        dca({ name: 'good', schedule: '0 10 * * *', timezone: 'UTC' }),
        dca({ name: 'bad', schedule: '* * * * * *', timezone: 'Mars/Olympus' }),
      ]);
    expect(refused).toThrow(ScheduleNotAddedError);
    expect(refused).toThrow(/strategy "bad".*Mars\/Olympus/);
    expect(triggers.size).toBe(1);
    await vi.advanceTimersByTimeAsync(1_000);
    // `good` is still on its old schedule, `bad` on none.
    expect(ticks).toEqual(['good']);
  });
});
