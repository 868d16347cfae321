import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter, recordStrategiesSeen, runCycle, Scheduler } from '../../src/engine/index.js';
import type { Strategy } from '../../src/strategy/index.js';
import {
  createTestDatabase,
  type TestBackend,
  type TestDatabase,
  testBackends,
} from '../support/database.js';
import { type EngineBench, startEngineBench, strategy } from './support/harness.js';

const NO_CLAIM_SENT = 'slot claimed elsewhere: no claim sent';
const LOST_CLAIM = 'slot already claimed';

/**
 * A burst of one slot queued on a replica, some or all of it already claimed by another replica, through the
 * real scheduler and cycle against a real database and sandbox; one cycle at a time, so that the queue is long.
 */
function burstBench(backend: TestBackend) {
  let test: TestDatabase;
  let bench: EngineBench;
  let batch = 0;

  beforeAll(async () => {
    test = await createTestDatabase(backend);
    bench = await startEngineBench({ test });
  });
  afterAll(async () => {
    await bench.close();
    await test.drop();
  });

  return {
    /** `count` strategies due at one slot, recorded as the worker records them at load. */
    async burst(count: number): Promise<{ strategies: Strategy[]; slot: Date }> {
      batch++;
      const strategies = Array.from({ length: count }, (_, index) =>
        strategy({ name: `burst-${batch}-${String(index).padStart(3, '0')}`, schedule: '0 10 * * *' }),
      );
      await recordStrategiesSeen(bench.context, strategies);
      return { strategies, slot: new Date(Date.UTC(2030, 5, batch, 10)) };
    },

    async claimElsewhere(strategies: readonly Strategy[], slot: Date): Promise<void> {
      for (const { name } of strategies) {
        await bench.database.cycles.claimSlot({
          account: 'default',
          strategy: name,
          slot,
          trigger: 'schedule',
          owner: 'other-replica',
        });
      }
    },

    /** Dispatches every strategy's slot on a fresh scheduler, waits for all of it, and sorts the log lines. */
    async dispatchAll(strategies: readonly Strategy[], slot: Date) {
      const from = bench.lines.length;
      const scheduler = new Scheduler({
        context: bench.context,
        limiter: createLimiter(1),
        runCycle: (request) => runCycle(bench.inAccount(), request),
        useCron: false,
      });
      for (const each of strategies) scheduler.dispatch(each, slot, 'schedule');
      await scheduler.settled();
      await scheduler.stop(1_000);
      const lines = bench.lines.slice(from);
      const named = (msg: string) => lines.filter((line) => line.msg === msg).map((line) => line.strategy);
      return { skipped: named(NO_CLAIM_SENT), lost: named(LOST_CLAIM), placed: named('cycle placed') };
    },

    cycleOf: (name: string, slot: Date) => bench.database.cycles.getBySlot(name, slot),
  };
}

/** The cycles another replica took are skipped without a claim; the others run as always. */
describe.runIf(testBackends().includes('postgres'))('slots claimed elsewhere in a burst', () => {
  const { burst, claimElsewhere, dispatchAll, cycleOf } = burstBench('postgres');

  it('skips the slots another replica claimed without a claim of its own, and runs the rest', async () => {
    const { strategies, slot } = await burst(40);
    const taken = strategies.filter((_, index) => index % 2 === 0);
    await claimElsewhere(taken, slot);

    const { skipped, lost, placed } = await dispatchAll(strategies, slot);

    const takenNames = taken.map((each) => each.name).sort();
    // Every slot the other replica took ends as not ours; the first cycles may start before the first read
    // answered and lose their claim as before.
    expect([...skipped, ...lost].sort()).toEqual(takenNames);
    expect(skipped.length).toBeGreaterThanOrEqual(taken.length - 3);
    expect(placed.sort()).toEqual(
      strategies.filter((each) => !taken.includes(each)).map((each) => each.name),
    );
    for (const each of taken) {
      expect(await cycleOf(each.name, slot)).toMatchObject({
        owner: 'other-replica',
        state: 'claimed',
      });
    }
  });

  it('never skips a slot it claimed itself, when none was claimed elsewhere', async () => {
    const { strategies, slot } = await burst(30);
    const { skipped, lost, placed } = await dispatchAll(strategies, slot);
    expect(skipped).toEqual([]);
    expect(lost).toEqual([]);
    expect(placed).toHaveLength(30);
  });

  it('below a burst, reads nothing: a taken slot is a lost claim, as before', async () => {
    const { strategies, slot } = await burst(5);
    await claimElsewhere(strategies, slot);
    const { skipped, lost } = await dispatchAll(strategies, slot);
    expect(skipped).toEqual([]);
    expect(lost.sort()).toEqual(strategies.map((each) => each.name));
  });
});

/** An embedded database has no other process to claim: nothing is read, and a taken slot is a lost claim. */
describe('slots claimed elsewhere in a burst, on PGlite', () => {
  const { burst, claimElsewhere, dispatchAll } = burstBench('pglite');

  it('on an embedded database, reads nothing: a taken slot is a lost claim', async () => {
    const { strategies, slot } = await burst(40);
    const taken = strategies.filter((_, index) => index % 2 === 0);
    await claimElsewhere(taken, slot);
    const { skipped, lost, placed } = await dispatchAll(strategies, slot);
    expect(skipped).toEqual([]);
    expect(lost.sort()).toEqual(taken.map((each) => each.name));
    expect(placed).toHaveLength(20);
  });
});
