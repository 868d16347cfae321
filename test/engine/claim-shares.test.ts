import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ClaimShares,
  createLimiter,
  MAX_HOLD_MS,
  recordStrategiesSeen,
  runCycle,
  Scheduler,
} from '../../src/engine/index.js';
import { type EngineBench, startEngineBench, strategy } from './support/harness.js';

const HELD_LINE = 'claiming held slots that their first claimant did not take';

/**
 * Live replicas split the scheduled slots instead of racing for each claim (claim-shares.ts). Before, every
 * replica claimed every due slot and all but one lost each claim: with two replicas, one lost claim per slot.
 */
describe('claim shares between live replicas', () => {
  let a: EngineBench;
  let b: EngineBench;
  let offsetMs = 0;
  const clock = () => new Date(Date.now() + offsetMs);
  beforeAll(async () => {
    a = await startEngineBench({ replicaId: 'replica-a', clock });
    b = await startEngineBench({ replicaId: 'replica-b', clock, test: a.test });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  /** A replica's scheduler as the worker builds it, driven by explicit dispatches (node-cron off). */
  function schedulerOf(bench: EngineBench, live: string[]) {
    const shares = new ClaimShares(bench.context.replicaId);
    shares.update(live);
    const scheduler = new Scheduler({
      context: bench.context,
      limiter: createLimiter(4),
      runCycle: (request) => runCycle(bench.context, request),
      useCron: false,
      shares,
    });
    return { scheduler, shares };
  }

  async function strategies(prefix: string) {
    const list = Array.from({ length: 24 }, (_, i) => strategy({ name: `${prefix}-${i}` }));
    await recordStrategiesSeen(a.context, list);
    return list;
  }

  async function ownersAt(prefix: string, slot: Date) {
    const cycles = await a.database.cycles.listRecent({ limit: 1_000 });
    return cycles
      .filter((cycle) => cycle.strategy.startsWith(`${prefix}-`) && cycle.slot.getTime() === slot.getTime())
      .map((cycle) => ({ strategy: cycle.strategy, owner: cycle.owner }));
  }

  /** A lost claim is logged at debug level only (announce.ts); the harness keeps debug lines. */
  /** A burst of `prefix` strategies fired on replica-a alone, with replica-b in its live set; settled. */
  async function burstOnReplicaA(prefix: string) {
    const list = await strategies(prefix);
    const slot = new Date(Math.floor(clock().getTime() / 1_000) * 1_000);
    const { scheduler, shares } = schedulerOf(a, ['replica-a', 'replica-b']);
    scheduler.start(list);
    for (const item of list) scheduler.dispatch(item, slot, 'schedule');
    await scheduler.settled();
    const own = list.filter((item) => shares.isFirstClaimant(item.name)).length;
    return { list, slot, scheduler, shares, own };
  }

  const lostClaims = (bench: EngineBench) =>
    bench.lines.filter((line) => line.msg === 'slot already claimed').length;

  it('two live replicas each claim their own share of a burst, once, with no lost claim', async () => {
    const list = await strategies('split');
    const slot = new Date(Math.floor(clock().getTime() / 1_000) * 1_000);
    const replicas = [schedulerOf(a, ['replica-a', 'replica-b']), schedulerOf(b, ['replica-b', 'replica-a'])];
    for (const { scheduler } of replicas) scheduler.start(list);
    // Both replicas' schedules fire for every strategy at the same instant.
    for (const item of list) for (const { scheduler } of replicas) scheduler.dispatch(item, slot, 'schedule');
    await Promise.all(replicas.map(({ scheduler }) => scheduler.settled()));
    // The look at held slots finds each one claimed by its first claimant: nothing more runs.
    await Promise.all(replicas.map(({ scheduler }) => scheduler.checkHeld()));
    await Promise.all(replicas.map(({ scheduler }) => scheduler.settled()));

    expect(lostClaims(a)).toBe(0);
    expect(lostClaims(b)).toBe(0);
    const owners = await ownersAt('split', slot);
    expect(owners.map((row) => row.strategy).sort()).toEqual(list.map((item) => item.name).sort());
    for (const row of owners) {
      const first = replicas.find(({ shares }) => shares.isFirstClaimant(row.strategy))!;
      expect(row.owner, row.strategy).toBe(first.shares.self);
    }
    const counts = ['replica-a', 'replica-b'].map((id) => owners.filter((row) => row.owner === id).length);
    expect(Math.min(...counts)).toBeGreaterThan(0);
    expect([...a.lines, ...b.lines].some((line) => line.msg === HELD_LINE)).toBe(false);
    for (const { scheduler } of replicas) await scheduler.stop(1_000);
  });

  it('claims the held slots of a first claimant that left the live set, at the next look', async () => {
    const { list, slot, scheduler, shares, own } = await burstOnReplicaA('gone');
    expect(own).toBeGreaterThan(0);
    expect(own).toBeLessThan(list.length);
    expect((await ownersAt('gone', slot)).length).toBe(own);

    // replica-b is still live: its share stays held.
    await scheduler.checkHeld();
    await scheduler.settled();
    expect((await ownersAt('gone', slot)).length).toBe(own);

    // Its heartbeat stopped: the next look claims the rest.
    shares.update(['replica-a']);
    await scheduler.checkHeld();
    await scheduler.settled();
    const owners = await ownersAt('gone', slot);
    expect(owners.length).toBe(list.length);
    expect(new Set(owners.map((row) => row.owner))).toEqual(new Set(['replica-a']));
    expect(a.lines.some((line) => line.msg === HELD_LINE && line.slots === list.length - own)).toBe(true);
    await scheduler.stop(1_000);
  });

  it('claims a held slot whose live first claimant never takes it once it waited MAX_HOLD_MS', async () => {
    // replica-b beats but does not know these strategies (a roll-out half done): it never claims them.
    const { list, slot, scheduler, shares, own } = await burstOnReplicaA('unknown');
    // One of replica-b's slots was claimed meanwhile (by it, late): that one is left alone.
    const taken = list.find((item) => !shares.isFirstClaimant(item.name))!;
    await b.database.cycles.claimSlot({
      strategy: taken.name,
      slot,
      trigger: 'schedule',
      owner: 'replica-b',
    });

    offsetMs += MAX_HOLD_MS - 1_000;
    await scheduler.checkHeld();
    await scheduler.settled();
    expect((await ownersAt('unknown', slot)).length).toBe(own + 1);

    offsetMs += 1_000;
    await scheduler.checkHeld();
    await scheduler.settled();
    const owners = await ownersAt('unknown', slot);
    expect(owners.length).toBe(list.length);
    expect(owners.filter((row) => row.owner === 'replica-b').map((row) => row.strategy)).toEqual([
      taken.name,
    ]);
    expect(lostClaims(a)).toBe(0);
    await scheduler.stop(1_000);
  });
});
