import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPurchaseClient } from '../../src/api/index.js';
import { createLiveness, recordStrategiesSeen } from '../../src/engine/index.js';
import { DEMO_TOKEN } from '../../src/sandbox/index.js';
import {
  d,
  type EngineBench,
  engineSettings,
  onClient,
  startEngineBench,
  strategy,
} from './support/harness.js';
import { startListingService } from './support/listing-service.js';
import { listedOrder } from './support/unsure-cycle.js';

/**
 * A replica killed mid-cycle stops beating; the next beat of any other replica sees it gone and takes its
 * work over at once. On the first release nothing knew that a replica died: its `submitting` cycle waited
 * for the time-based recovery (order timeout + submittingMarginMs, 40 s by default).
 */
describe('replica liveness', () => {
  let bench: EngineBench;
  let now = new Date('2031-06-01T12:00:00Z');
  beforeAll(async () => {
    bench = await startEngineBench({ clock: () => now, replicaId: 'survivor' });
  });
  afterAll(() => bench.close());

  /** A cycle of `owner` left in `state`, as a process would leave it when killed. */
  async function leftBy(owner: string, name: string, state: 'claimed' | 'submitting') {
    const { database } = bench;
    await recordStrategiesSeen(bench.context, [strategy({ name })]);
    const claimed = (await database.cycles.claimSlot({
      account: 'default',
      strategy: name,
      slot: now,
      trigger: 'schedule',
      owner,
    }))!;
    if (state === 'claimed') return claimed;
    const quote = await database.quotes.record(claimed.id, {
      quoteId: `Q${claimed.id}LIVE`.slice(0, 9),
      symbol: 'USDTBRL',
      amount: d('100.00'),
      price: d('5.4000'),
      totalCost: d('100.00'),
      totalFilled: d('18.518518'),
      expiresIn: d('5'),
      requestedAt: now,
      receivedAt: now,
      deadlineAt: now,
    });
    await database.cycles.transition(claimed.id, 'claimed', 'quoted', { quote });
    return (await database.cycles.transition(claimed.id, 'quoted', 'submitting'))!;
  }

  it('takes over a silent replica’s cycles and leases within its silence limit, not the recovery margins', async () => {
    const { database } = bench;
    await database.replicas.register({ id: 'killed', host: 'h1', pid: 101 });
    await database.replicas.register({ id: 'alive', host: 'h2', pid: 102 });
    const inFlight = await leftBy('killed', 'live-in-flight', 'submitting');
    const idle = await leftBy('killed', 'live-idle', 'claimed');
    const othersCycle = await leftBy('alive', 'live-other', 'submitting');
    const unknownOwner = await leftBy('not-registered', 'live-unknown', 'submitting');
    await database.orders.recordExternal({
      account: 'default',
      id: 'ORD-LEASED',
      symbol: 'USDTBRL',
      amount: d('1'),
      price: d('5'),
      side: 'BUY',
      timestamp: now,
      quoteId: null,
    });
    await database.orders.claimDue('default', 'killed', now, 60_000, 10);

    const survivor = createLiveness(bench.context, { goneAfterMs: 3_000 });
    await database.replicas.register({ id: 'survivor', host: 'h0', pid: 100 });
    // 2 s of silence: not gone yet.
    now = new Date(now.getTime() + 2_000);
    await database.replicas.heartbeat({ id: 'alive', host: 'h2', pid: 102 });
    expect(await survivor.beat()).toEqual([]);
    // 4 s: gone. 'alive' kept beating.
    now = new Date(now.getTime() + 2_000);
    await database.replicas.heartbeat({ id: 'alive', host: 'h2', pid: 102 });
    expect(await survivor.beat()).toEqual(['killed']);

    expect(await database.cycles.get(inFlight.id)).toMatchObject({
      state: 'unsure',
      errorCode: 'ABANDONED_IN_FLIGHT',
    });
    expect(await database.cycles.get(idle.id)).toMatchObject({ state: 'failed', reasonCode: 'abandoned' });
    expect((await database.cycles.get(othersCycle.id))!.state).toBe('submitting');
    // An owner that never registered (a `once` command, an older version) is left to the time-based recovery.
    expect((await database.cycles.get(unknownOwner.id))!.state).toBe('submitting');
    expect(await database.orders.getByServiceId('default', 'ORD-LEASED')).toMatchObject({ leaseOwner: null });
    expect((await database.replicas.list()).map((replica) => replica.id).sort()).toEqual([
      'alive',
      'survivor',
    ]);
    expect(bench.lines.some((line) => line.alert === 'replica_lost' && line.replica === 'killed')).toBe(true);
  });

  it('with the defaults, every order a killed replica had in flight is recorded and none of its cycles is unsure 10 s after its death', async () => {
    const { database } = bench;
    const diedAt = now;
    await database.replicas.register({ id: 'killed-2', host: 'h3', pid: 103 });
    const sent = await leftBy('killed-2', 'live-sent', 'submitting');
    const lost = await leftBy('killed-2', 'live-lost', 'submitting');
    // The service has the first cycle's order (it arrived before the kill), not the second's.
    const service = await startListingService([
      { ...listedOrder('ORD-SENT', { quoteId: sent.quoteId!, timestamp: diedAt }), price: '5.4000' },
    ]);
    const client = createPurchaseClient({ baseUrl: service.url, token: DEMO_TOKEN });
    try {
      const context = { ...onClient(bench.context, client), settings: engineSettings() };
      const survivor = createLiveness(context);
      // Beats and passes once a second, as the running replica does, for 10 s after the death.
      for (let second = 1; second <= 10; second++) {
        now = new Date(diedAt.getTime() + second * 1_000);
        await database.replicas.heartbeat({ id: 'survivor', host: 'h0', pid: 100 });
        await survivor.beat();
        await survivor.reconcileTakenOver();
      }
      expect(await database.cycles.get(sent.id)).toMatchObject({
        state: 'placed',
        serviceOrderId: 'ORD-SENT',
      });
      expect(await database.orders.getByServiceId('default', 'ORD-SENT')).toMatchObject({ cycleId: sent.id });
      expect(await database.cycles.get(lost.id)).toMatchObject({
        state: 'not_placed',
        reasonCode: 'not_found_at_service',
      });
    } finally {
      await client.close();
      await service.close();
    }
  });
});
