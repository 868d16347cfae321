/**
 * Follows one account's open orders to `settled` through that account's tracking endpoint. Replicas share
 * the work through the database: each poll leases a batch of the account's due orders (SELECT … FOR UPDATE
 * SKIP LOCKED plus a lease), so an order is checked by one replica at a time. Webhooks only nudge: they
 * trigger an immediate check of the account's order of that id.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { createServiceGate } from '../api/index.js';
import type { OrderRecord, SettlementSource } from '../db/index.js';
import { createPeriodicTask } from '../runtime/periodic-task.js';
import { callDatabase } from './database-call.js';
import { type CheckResult, createOrderCheck, type OrderCheckDeps } from './order-check.js';

/**
 * What a check of one order takes, but its gate, clock and jitter: the tracker makes the one gate its polls
 * and nudges share, and defaults the other two.
 */
export interface TrackerDeps extends Omit<OrderCheckDeps, 'gate' | 'clock' | 'random'> {
  /** The account whose orders this tracker follows, with `client`, that account's client. */
  account: string;
  clock?: () => Date;
  /** This replica's name on leases; default host, pid and a random suffix. */
  owner?: string;
  /** Jitter source of the backoff. */
  random?: () => number;
}

/** What a nudge did: checked the order, or why it did not. */
export type NudgeOutcome = 'checked' | 'unknown_order' | 'settled' | 'failed';

export interface Tracker {
  /** Starts polling, when enabled. Idempotent. */
  start(): void;
  /** Stops polling and waits for checks in flight. Idempotent. */
  stop(): Promise<void>;
  /**
   * Checks the account's order of this id now: a check that starts after the call, shared with other
   * nudges and polls of the same order. Never rejects.
   */
  nudge(serviceOrderId: string, source?: SettlementSource): Promise<NudgeOutcome>;
  /** One poll pass; resolves to the number of orders checked. */
  pollOnce(): Promise<number>;
}

export function createTracker(deps: TrackerDeps): Tracker {
  const { database, settings, account } = deps;
  const logger = deps.logger.child({ account });
  const clock = deps.clock ?? (() => new Date());
  const owner = deps.owner ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  // Polls and nudges together: a burst of webhooks or a backlog of due orders cannot flood the account's
  // service. The bound is per account (src/tracking/index.ts says why).
  const gate = createServiceGate({ ratePerSecond: settings.poll.maxRequestsPerSecond });
  const checkOrder = createOrderCheck({ ...deps, logger, gate, clock, random: deps.random ?? Math.random });
  const inFlight = new Map<string, Promise<CheckResult>>();
  /** At most one nudge per order waits for the check in flight, then checks again (see nudge). */
  const queuedNudges = new Map<string, Promise<NudgeOutcome>>();
  let lifetime = new AbortController();

  const check = (order: OrderRecord, source: SettlementSource, signal: AbortSignal) => {
    const running = inFlight.get(order.serviceOrderId);
    if (running) return running;
    const started = checkOrder(order, source, signal)
      .catch((error: unknown): CheckResult => {
        // Only the rate gate throws here, when stopping; the order's lease runs out and it is picked up again.
        if (!signal.aborted)
          logger.error({ err: error, orderId: order.serviceOrderId }, 'tracking check failed');
        return { ok: false };
      })
      .finally(() => inFlight.delete(order.serviceOrderId));
    inFlight.set(order.serviceOrderId, started);
    return started;
  };

  const pollPass = async (signal: AbortSignal): Promise<number> => {
    const { batchSize, leaseMs, concurrency } = settings.poll;
    const due = await callDatabase(deps, 'tracking_claim', () =>
      database.orders.claimDue(account, owner, clock(), leaseMs, batchSize),
    );
    const queue = [...due];
    const worker = async () => {
      for (let order = queue.shift(); order && !signal.aborted; order = queue.shift()) {
        await check(order, 'poll', signal);
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, queue.length) }, worker));
    return due.length;
  };

  const poller = createPeriodicTask({
    name: 'tracking poll',
    intervalMs: settings.poll.intervalMs,
    logger,
    run: pollPass,
    // A full batch means more orders are due: go again at once instead of after the interval.
    again: (checked) => checked >= settings.poll.batchSize,
  });
  let started = false;

  const nudgeNow = async (serviceOrderId: string, source: SettlementSource): Promise<NudgeOutcome> => {
    let order: OrderRecord | null;
    try {
      order = await callDatabase(deps, 'tracking_read_order', () =>
        database.orders.getByServiceId(account, serviceOrderId),
      );
    } catch (error) {
      logger.error({ err: error, orderId: serviceOrderId }, 'nudge could not read the order');
      return 'failed';
    }
    if (order === null) return 'unknown_order';
    if (order.settledAt !== null) return 'settled';
    const result = await check(order, source, lifetime.signal);
    return result.ok ? 'checked' : 'failed';
  };

  return {
    start() {
      if (started) return;
      started = true;
      if (lifetime.signal.aborted) lifetime = new AbortController();
      if (settings.poll.enabled) poller.start();
      logger.info({ owner, polling: settings.poll.enabled }, 'settlement tracker started');
    },

    async stop() {
      if (!started) return;
      started = false;
      lifetime.abort(new Error('tracker stopped'));
      await poller.stop();
      await Promise.all([...inFlight.values(), ...queuedNudges.values()]);
      logger.info({ owner }, 'settlement tracker stopped');
    },

    nudge(serviceOrderId, source = 'webhook') {
      const running = inFlight.get(serviceOrderId);
      if (running === undefined) return nudgeNow(serviceOrderId, source);
      // The check in flight may have read the order before the news the nudge brings: check once more
      // after it, shared by every nudge that arrives meanwhile.
      let queued = queuedNudges.get(serviceOrderId);
      if (queued === undefined) {
        queued = running.then(() => {
          queuedNudges.delete(serviceOrderId);
          return nudgeNow(serviceOrderId, source);
        });
        queuedNudges.set(serviceOrderId, queued);
      }
      return queued;
    },

    pollOnce: () => pollPass(lifetime.signal),
  };
}
