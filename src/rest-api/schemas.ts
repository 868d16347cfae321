/**
 * The shapes of the REST API's answers (the records: status, cycles, orders; review-schemas.ts has what
 * people review and decide), as zod schemas registered under their component names: every answer
 * is parsed through its schema before it leaves (so what is sent is what is documented, and nothing else:
 * unknown members are dropped), and the OpenAPI document's components are generated from this registry
 * (openapi.ts). Money is decimal text, never a JSON number; instants are ISO 8601 in UTC.
 */
import { z } from 'zod';
import { CYCLE_STATES, CYCLE_TRIGGERS, SETTLEMENT_STATUSES } from '../db/index.js';

export const COMPONENTS = z.registry<{ id: string; description?: string }>();

export function component<T extends z.ZodType>(id: string, schema: T, description?: string): T {
  COMPONENTS.add(schema, { id, ...(description ? { description } : {}) });
  return schema;
}

export const Decimal = component(
  'Decimal',
  z.string().regex(/^-?\d+(\.\d+)?$/),
  'an exact decimal number as text, such as "5.4123": money is never a JSON number',
);
export const Instant = component('Instant', z.iso.datetime(), 'an instant, ISO 8601 in UTC');

export const text = z.string().nullable();
export const decimal = Decimal.nullable();
export const instant = Instant.nullable();

export const Problem = component(
  'Problem',
  z.object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    code: z.string(),
    instance: z.string().optional(),
    errors: z.array(z.object({ field: z.string(), message: z.string() })).optional(),
  }),
  "an RFC 9457 problem document; `code` is the project's stable error code",
);

export const ControlState = component(
  'ControlState',
  z.object({ paused: z.boolean(), reason: text, changedAt: instant, changedBy: text }),
  'the kill switch: while paused, every replica places no order',
);

const Difference = z.object({ field: z.string(), expected: z.string(), got: z.string() });

const StatusCycle = z.object({
  strategy: z.string(),
  account: z.string(),
  slot: Instant,
  state: z.enum(CYCLE_STATES),
  settlement: text,
  reason: text,
  errorCode: text,
  quoteId: text,
  orderId: text,
  price: decimal,
  amount: decimal,
  totalCost: decimal,
  updatedAt: Instant,
});

export const Target = component(
  'Target',
  z.object({
    account: z.string(),
    name: z.string(),
    version: z.number().int(),
    state: z.enum(['scheduled', 'active', 'completed', 'missed']),
    measure: z.enum(['spend', 'receive']),
    total: Decimal,
    done: Decimal,
    left: Decimal,
    spent: Decimal,
    received: Decimal,
    percentDone: Decimal,
    line: Decimal,
    ahead: Decimal,
    averagePrice: decimal,
    quoteAverage: decimal,
    projectedFinish: instant,
    window: z.object({ start: Instant, end: Instant }),
  }),
  'where a target stands: `done`, `left`, `line` and `ahead` in its measure (fiat for spend, crypto for receive), `ahead` negative behind the straight line from start to end; `averagePrice` is what was paid per unit, `quoteAverage` the mean of the quotes seen in the window',
);

export const Status = component(
  'Status',
  z.object({
    paused: z.object({ paused: z.boolean(), reason: text, since: instant, by: text }),
    haltedStrategies: z.array(
      z.object({ name: z.string(), account: z.string(), since: instant, reason: text }),
    ),
    replicas: z.array(
      z.object({
        id: z.string(),
        host: z.string(),
        pid: z.number().int(),
        startedAt: Instant,
        lastHeartbeat: Instant,
        inFlightCycles: z.number().int(),
        apiPace: z.number().nullable(),
      }),
    ),
    recentCycles: z.array(StatusCycle),
    unsureCycles: z.array(StatusCycle),
    discrepancies: z.array(StatusCycle.extend({ discrepancy: z.array(Difference) })),
    openOrders: z.array(
      z.object({
        orderId: z.string(),
        account: z.string(),
        origin: z.string(),
        status: z.enum(SETTLEMENT_STATUSES),
        symbol: z.string(),
        amount: Decimal,
        price: Decimal,
        placedAt: Instant,
        ageSeconds: z.number().int(),
        lastProgressAt: Instant,
        stuck: z.boolean(),
      }),
    ),
    targets: z.array(Target),
  }),
  'what `treasury-bot status` shows: the kill switch, halts, replicas, recent and unsure cycles, open orders, targets',
);

export const Cycle = component(
  'Cycle',
  z.object({
    id: z.number().int(),
    strategy: z.string(),
    account: z.string(),
    strategyVersion: z.number().int().nullable(),
    slot: Instant,
    trigger: z.enum(CYCLE_TRIGGERS),
    state: z.enum(CYCLE_STATES),
    owner: z.string(),
    reasonCode: text,
    errorCode: text,
    errorMessage: text,
    quoteId: text,
    amount: decimal,
    price: decimal,
    totalCost: decimal,
    serviceOrderId: text,
    envelopeId: z.number().int().nullable(),
    claimedAt: Instant,
    updatedAt: Instant,
    submittedAt: instant,
    finishedAt: instant,
  }),
);

export const CycleList = component(
  'CycleList',
  z.object({ cycles: z.array(Cycle), next: text }),
  'newest first; `next` is the cursor of the following page, null after the last',
);

export const Order = component(
  'Order',
  z.object({
    serviceOrderId: z.string(),
    account: z.string(),
    origin: z.enum(['cycle', 'external']),
    cycleId: z.number().int().nullable(),
    quoteId: text,
    symbol: z.string(),
    amount: Decimal,
    price: Decimal,
    side: z.string(),
    placedAt: Instant,
    status: z.enum(SETTLEMENT_STATUSES),
    expectedAmount: decimal,
    receivedAmount: decimal,
    withdrawnAmount: decimal,
    settledAt: instant,
  }),
);

const CycleApproval = z.object({
  approversRequired: z.number().int(),
  parkedAt: Instant,
  expiresAt: Instant,
  parkedPrice: Decimal,
  defaultMaxPrice: Decimal,
  approvedMaxPrice: decimal,
  decision: z.enum(['approved', 'rejected', 'expired']).nullable(),
  decidedAt: instant,
  decidedBy: text,
  reason: text,
  approvals: z.array(z.object({ person: z.string(), at: Instant, maxPrice: decimal })),
});

export const CycleDetail = component(
  'CycleDetail',
  Cycle.extend({
    trace: z.unknown(),
    discrepancy: z.array(Difference).nullable(),
    quotes: z.array(
      z.object({
        quoteId: z.string(),
        symbol: z.string(),
        amount: Decimal,
        price: Decimal,
        totalCost: Decimal,
        totalFilled: Decimal,
        requestedAt: Instant,
        receivedAt: Instant,
        deadlineAt: Instant,
      }),
    ),
    order: Order.nullable(),
    settlement: z.array(
      z.object({
        recordedAt: Instant,
        source: z.string(),
        fromStatus: z.enum(SETTLEMENT_STATUSES).nullable(),
        toStatus: z.enum(SETTLEMENT_STATUSES),
        expectedAmount: decimal,
        receivedAmount: decimal,
        withdrawnAmount: decimal,
        withdrawal: z.unknown(),
        anomaly: text,
      }),
    ),
    approval: CycleApproval.nullable(),
  }),
  "one cycle with its decision trace (every rule with its figures), quotes, order and the order's settlement timeline, oldest step first",
);

export const OrderPage = component(
  'OrderPage',
  z.object({
    from: Instant,
    to: Instant,
    orders: z.array(
      z.object({
        orderId: z.string(),
        origin: z.string(),
        strategy: text,
        strategyVersion: text,
        slot: instant,
        quoteId: text,
        placedAt: Instant,
        symbol: z.string(),
        amount: Decimal,
        price: Decimal,
        totalCost: decimal,
        totalFilled: decimal,
        status: z.string(),
        pendingAt: instant,
        partialAt: instant,
        paidAt: instant,
        withdrawnAt: instant,
        settledAt: instant,
        expectedAmount: decimal,
        receivedAmount: decimal,
        withdrawalNetwork: text,
        transactionId: text,
        withdrawnAmount: decimal,
        discrepancy: z.boolean(),
      }),
    ),
    next: text,
  }),
  'the rows of `treasury-bot export orders`, oldest first; `next` is the cursor of the following page',
);

export const Resolution = component(
  'Resolution',
  z.object({ cycle: Cycle, order: Order.nullable() }),
  'the settled cycle, and the order adopted for it',
);

export const CycleReport = component(
  'CycleReport',
  z.object({
    strategy: z.string(),
    slot: Instant,
    outcome: z.enum(['placed', 'skipped', 'dry-run', 'failed', 'unsure', 'awaiting-approval']),
    reason: z.string(),
    quoteId: text,
    orderId: text,
    price: decimal,
    amount: decimal,
    totalCost: decimal,
  }),
  'one cycle run now, as `treasury-bot once --json` reports it',
);
