import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVERY_ACCOUNT } from '../../src/db/index.js';
import { findMissedSlots, recordStrategiesSeen, Worker } from '../../src/engine/index.js';
import { type EngineBench, startEngineBench, strategy } from './support/harness.js';

/** The missed policy at start, with the time passed in. */
describe('missed slots', () => {
  let bench: EngineBench;
  const weekday = strategy({
    name: 'weekday',
    schedule: '0 10 * * 1-5',
    timezone: 'America/Sao_Paulo',
    missed: 'once',
    missedGraceMs: 30 * 60_000,
  });
  beforeAll(async () => {
    bench = await startEngineBench();
    await recordStrategiesSeen(bench.context, [
      weekday,
      strategy({ name: 'skipper', schedule: '0 10 * * *' }),
    ]);
  });
  afterAll(() => bench.close());

  const at = (iso: string) => new Date(iso);

  it('runs the latest missed slot within the grace (missed: once), one per strategy', async () => {
    // Monday 10:04 in São Paulo (13:04 UTC); the worker was down since the previous week.
    const found = await findMissedSlots(bench.context, [weekday], at('2030-07-01T13:04:00Z'));
    expect(found.map((entry) => [entry.strategy.name, entry.slot.toISOString()])).toEqual([
      ['weekday', '2030-07-01T13:00:00.000Z'],
    ]);
  });

  it('runs nothing past the grace, nothing for missed: skip, nothing for disabled strategies', async () => {
    expect(await findMissedSlots(bench.context, [weekday], at('2030-07-01T13:31:00Z'))).toEqual([]);
    const skipper = strategy({ name: 'skipper', schedule: '0 10 * * *' });
    expect(await findMissedSlots(bench.context, [skipper], at('2030-07-01T10:04:00Z'))).toEqual([]);
    expect(
      await findMissedSlots(bench.context, [{ ...weekday, enabled: false }], at('2030-07-01T13:04:00Z')),
    ).toEqual([]);
  });

  it('runs nothing when any replica already handled that slot', async () => {
    await bench.database.cycles.claimSlot({
      account: 'default',
      strategy: 'weekday',
      slot: at('2030-07-02T13:00:00Z'),
      trigger: 'schedule',
      owner: 'another-replica',
    });
    expect(await findMissedSlots(bench.context, [weekday], at('2030-07-02T13:05:00Z'))).toEqual([]);
  });

  it('a starting worker runs the latest missed slot once, with trigger missed', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'tb-missed-'));
    await writeFile(
      join(folder, 'missed.yaml'),
      'name: minutely\nkind: dca\nsymbol: USDTBRL\namount: "100.00"\nschedule: "* * * * *"\ntimezone: UTC\nmissed: once\nmissedGrace: 10m\n',
    );
    const worker = new Worker(bench.context, { strategiesPath: folder, useCron: false });
    try {
      await worker.start();
      await worker.scheduler.settled();
    } finally {
      await worker.stop();
      await rm(folder, { recursive: true, force: true });
    }
    const cycles = await bench.database.cycles.listRecent(EVERY_ACCOUNT, { strategy: 'minutely' });
    expect(cycles.map((cycle) => [cycle.trigger, cycle.state])).toEqual([['missed', 'placed']]);
    expect(cycles[0]!.slot.getUTCSeconds()).toBe(0);
  });
});
