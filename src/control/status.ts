/**
 * What the worker decided and bought lately, what is still settling, what needs an operator (unsure
 * cycles, halted strategies, the kill switch) and where each target stands, with the replicas that run:
 * `treasury-bot status` prints it, the REST API serves it. Reads the database only; never the service. The
 * rows are the scope's accounts', each naming its account; the kill switch and the replicas are the
 * deployment's, every account's.
 */
import {
  type AccountScope,
  type Cycle,
  type Database,
  EVERY_ACCOUNT,
  type FigureDifference,
  type OrderRecord,
} from '../db/index.js';
import { type Decimal, Rounding } from '../money.js';
import { readTargets, type TargetReport } from './targets.js';

export interface StatusReport {
  paused: { paused: boolean; reason: string | null; since: Date | null; by: string | null };
  haltedStrategies: { account: string; name: string; since: Date | null; reason: string | null }[];
  recentCycles: ReturnType<typeof cycleView>[];
  unsureCycles: ReturnType<typeof cycleView>[];
  discrepancies: (ReturnType<typeof cycleView> & { discrepancy: FigureDifference[] })[];
  replicas: {
    id: string;
    host: string;
    pid: number;
    startedAt: Date;
    lastHeartbeat: Date;
    inFlightCycles: number;
    /** Requests per second the replica keeps to at the service (learnt from 429s, capped by api.rateLimit); null: none. */
    apiPace: number | null;
  }[];
  openOrders: ReturnType<typeof orderView>[];
  targets: ReturnType<typeof targetView>[];
}

export async function readStatus(
  database: Database,
  scope: AccountScope,
  limit: number,
  now: Date,
): Promise<StatusReport> {
  const [control, halted, recent, unsure, open, flagged, replicas, inFlight, targets] = await Promise.all([
    database.control.get(),
    database.strategies.listHalted(scope),
    database.cycles.listRecent(scope, { limit }),
    database.cycles.listByState(scope, 'unsure', 1000),
    database.orders.listOpen(scope, 1000),
    database.cycles.listWithDiscrepancy(scope, 100),
    database.replicas.list(),
    // A replica's load is every account's cycles, whatever the scope: it is one process.
    Promise.all(
      (['claimed', 'quoted', 'submitting'] as const).map((state) =>
        database.cycles.listByState(EVERY_ACCOUNT, state, 1000),
      ),
    ),
    readTargets(database, scope, now),
  ]);
  const inFlightBy = new Map<string, number>();
  for (const cycle of inFlight.flat()) inFlightBy.set(cycle.owner, (inFlightBy.get(cycle.owner) ?? 0) + 1);
  const settlement = await database.orders.statusOfCycles(recent.map((cycle) => cycle.id));
  return {
    paused: {
      paused: control.paused,
      reason: control.reason,
      since: control.changedAt,
      by: control.changedBy,
    },
    haltedStrategies: halted.map((strategy) => ({
      account: strategy.account,
      name: strategy.name,
      since: strategy.haltedAt,
      reason: strategy.haltReason,
    })),
    // The settlements are read after the cycles, while the worker goes on: an order recorded in between is
    // left out for a cycle whose row, as read, names no order, so that each line is one moment's view.
    recentCycles: recent.map((cycle) =>
      cycleView(cycle, cycle.serviceOrderId === null ? null : (settlement.get(cycle.id) ?? null)),
    ),
    unsureCycles: unsure.map((cycle) => cycleView(cycle, null)),
    replicas: replicas.map((replica) => ({
      id: replica.id,
      host: replica.host,
      pid: replica.pid,
      startedAt: replica.startedAt,
      lastHeartbeat: replica.heartbeatAt,
      inFlightCycles: inFlightBy.get(replica.id) ?? 0,
      apiPace: replica.apiPace,
    })),
    discrepancies: flagged.map((cycle) => ({
      ...cycleView(cycle, null),
      discrepancy: cycle.discrepancy ?? [],
    })),
    openOrders: open.map((order) => orderView(order, now)),
    targets: targets.map(targetView),
  };
}

/** `settlement`: the status of the cycle's order (`pending` … `settled`), null when it has none. */
function cycleView(cycle: Cycle, settlement: string | null) {
  return {
    account: cycle.account,
    strategy: cycle.strategy,
    slot: cycle.slot,
    state: cycle.state,
    settlement,
    reason: cycle.reasonCode,
    errorCode: cycle.errorCode,
    quoteId: cycle.quoteId,
    orderId: cycle.serviceOrderId,
    price: cycle.price,
    amount: cycle.amount,
    totalCost: cycle.totalCost,
    updatedAt: cycle.updatedAt,
  };
}

function orderView(order: OrderRecord, now: Date) {
  return {
    account: order.account,
    orderId: order.serviceOrderId,
    origin: order.origin,
    status: order.status,
    symbol: order.symbol,
    amount: order.amount,
    price: order.price,
    placedAt: order.serviceTimestamp,
    ageSeconds: Math.max(0, Math.round((now.getTime() - order.serviceTimestamp.getTime()) / 1000)),
    lastProgressAt: order.lastProgressAt,
    stuck: order.stuckFlaggedAt !== null,
  };
}

/** Places shown: fiat to the cent, crypto to the service's micro-unit, prices as the service quotes them. */
const FIAT_PLACES = 2;
const CRYPTO_PLACES = 6;
const PRICE_PLACES = 4;

/**
 * A target as people read it. `done`, `left`, `line` and `ahead` are in its measure (fiat for `spend`, crypto
 * for `receive`); `ahead` is negative behind the straight line. The figures from the record are exact;
 * the line, the averages and the share are rounded to what is shown.
 */
function targetView({ name, account, version, window, standing }: TargetReport) {
  const places = standing.measure === 'spend' ? FIAT_PLACES : CRYPTO_PLACES;
  const shown = (value: Decimal, scale = places) => value.toDecimalPlaces(scale, Rounding.halfEven);
  return {
    account,
    name,
    version,
    state: standing.state,
    measure: standing.measure,
    total: standing.total,
    done: standing.done,
    left: standing.left,
    spent: standing.spent,
    received: standing.received,
    // Rounded down: a target short of its total never shows 100.
    percentDone: standing.ratio.times(100).toDecimalPlaces(2, Rounding.down),
    line: shown(standing.line),
    ahead: shown(standing.ahead),
    averagePrice: standing.averagePrice ? shown(standing.averagePrice, PRICE_PLACES) : null,
    quoteAverage: standing.quoteAverage ? shown(standing.quoteAverage, PRICE_PLACES) : null,
    projectedFinish: standing.projectedFinish ?? null,
    window,
  };
}
