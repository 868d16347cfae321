/**
 * What the REST API reads, each through the read the CLI or the console already makes: `status`'s report,
 * the strategies with their versions, cycles with their decision trace and settlement timeline, the orders
 * of `export orders` page by page, the parked cycles and envelopes of src/control, `report`'s figures and
 * the audit log. Each is handed the token's account scope whole: a record of an account outside it is not
 * listed, summed or found.
 */
import { z } from 'zod';
import { createApprovalControl, listStrategies, readStatus } from '../control/index.js';
import { CYCLE_STATES, type Cycle, inScope, SETTLEMENT_STATUSES } from '../db/index.js';
import {
  buildReport,
  checkPeriod,
  checkTimeZone,
  GROUPINGS,
  orderPage,
  parseReportInstant,
} from '../reports/index.js';
import {
  type ApiCall,
  cursorParam,
  decodeCursor,
  defineOperation,
  encodeCursor,
  idParam,
  type Operation,
  pageSize,
} from './operation.js';
import { ApiProblem } from './problems.js';
import { Approvals, AuditPage, EnvelopeList, Report, StrategyList } from './review-schemas.js';
import { CycleDetail, CycleList, OrderPage, Status } from './schemas.js';

/** A page of cycles or audit entries ends at a row id; the next one starts below it. */
const IdCursor = z.object({ before: z.number().int().positive() });
const OrderCursor = z.object({ timestamp: z.string().max(64), id: z.string().regex(/^\d{1,19}$/) });

/** A period as `report` and `export orders` read it: dates in the zone named, else reports.timezone. */
const periodQuery = {
  from: z.string().max(64),
  to: z.string().max(64),
  tz: z.string().max(64).optional(),
};

function periodOf(call: ApiCall<unknown, { from: string; to: string; tz?: string }, unknown>) {
  const timeZone = checkTimeZone('tz', call.query.tz ?? call.context.timeZone);
  const from = parseReportInstant('from', call.query.from, timeZone);
  const to = parseReportInstant('to', call.query.to, timeZone);
  return { period: checkPeriod(from, to), timeZone };
}

/** The cycle, when the token's accounts reach it; otherwise it does not exist for the token. */
export async function cycleInScope(call: ApiCall<unknown, unknown, unknown>, id: number): Promise<Cycle> {
  const cycle = await call.context.database.cycles.get(id);
  if (!cycle || !inScope(call.scope, cycle.account)) {
    throw new ApiProblem('CYCLE_NOT_FOUND', `no cycle with id ${id}`);
  }
  return cycle;
}

export const READ_OPERATIONS: readonly Operation[] = [
  defineOperation({
    id: 'getStatus',
    method: 'GET',
    path: '/status',
    summary:
      'The kill switch, halted strategies, replicas, recent and unsure cycles, open orders and where each target stands',
    requires: 'read',
    query: z.strictObject({ limit: pageSize(1000, 20) }),
    answer: Status,
    async run({ context, query, scope }) {
      return readStatus(context.database, scope, query.limit, context.clock());
    },
  }),
  defineOperation({
    id: 'listStrategies',
    method: 'GET',
    path: '/strategies',
    summary: 'Every recorded strategy with its halt and its versions (which one runs, who approved each)',
    requires: 'read',
    answer: StrategyList,
    async run({ context, scope }) {
      return { strategies: await listStrategies(context.database, scope) };
    },
  }),
  defineOperation({
    id: 'listCycles',
    method: 'GET',
    path: '/cycles',
    summary: 'Cycles, newest first, of one strategy or in one state if asked, a page at a time',
    requires: 'read',
    query: z.strictObject({
      strategy: z.string().max(200).optional(),
      state: z.enum(CYCLE_STATES).optional(),
      limit: pageSize(500, 50),
      cursor: cursorParam.optional(),
    }),
    answer: CycleList,
    async run({ context, query, scope }) {
      const beforeId = query.cursor === undefined ? undefined : decodeCursor(query.cursor, IdCursor).before;
      const { strategy, state, limit } = query;
      const cycles = await context.store.reads.listCycles({
        scope,
        strategy,
        state,
        beforeId,
        limit: limit + 1,
      });
      const page = cycles.slice(0, limit);
      const last = page.at(-1);
      return { cycles: page, next: cycles.length > limit && last ? encodeCursor({ before: last.id }) : null };
    },
  }),
  defineOperation({
    id: 'getCycle',
    method: 'GET',
    path: '/cycles/:id',
    summary: "One cycle: its decision trace, quotes, order, the order's settlement timeline and its approval",
    requires: 'read',
    params: z.strictObject({ id: idParam }),
    answer: CycleDetail,
    async run(call) {
      const { database } = call.context;
      const cycle = await cycleInScope(call, Number(call.params.id));
      const [quotes, order, approval] = await Promise.all([
        database.quotes.forCycle(cycle.id),
        database.orders.forCycle(cycle.id),
        database.approvals.forCycle(cycle.id),
      ]);
      const history = order ? await database.orders.history(order.id) : [];
      return {
        ...cycle,
        quotes,
        order: order && { ...order, placedAt: order.serviceTimestamp },
        settlement: history,
        approval,
      };
    },
  }),
  defineOperation({
    id: 'listOrders',
    method: 'GET',
    path: '/orders',
    summary:
      'The orders placed in a period, ours and external, as `export orders` writes them, a page at a time',
    requires: 'read',
    query: z.strictObject({
      ...periodQuery,
      strategy: z.string().max(200).optional(),
      status: z.enum(SETTLEMENT_STATUSES).optional(),
      limit: pageSize(1000, 100),
      cursor: cursorParam.optional(),
    }),
    answer: OrderPage,
    async run(call) {
      const { period } = periodOf(call);
      const { strategy, status, limit, cursor } = call.query;
      const after = cursor === undefined ? null : decodeCursor(cursor, OrderCursor);
      const page = await orderPage(call.context.database, call.scope, period, after, limit, {
        strategy,
        status,
      });
      return {
        from: period.start,
        to: period.end,
        orders: page.orders,
        next: page.next === null ? null : encodeCursor(page.next),
      };
    },
  }),
  defineOperation({
    id: 'listApprovals',
    method: 'GET',
    path: '/approvals',
    summary: 'Cycles parked for approval, oldest first, with who approved so far and the deadline',
    requires: 'read',
    answer: Approvals,
    async run({ context, scope }) {
      return { approvals: await createApprovalControl(context.database).listParked(scope) };
    },
  }),
  defineOperation({
    id: 'listEnvelopes',
    method: 'GET',
    path: '/envelopes',
    summary: 'Every envelope, newest first, with its spend and room left',
    requires: 'read',
    answer: EnvelopeList,
    async run({ context, scope }) {
      return {
        envelopes: await createApprovalControl(context.database).listEnvelopes(scope),
      };
    },
  }),
  defineOperation({
    id: 'getReport',
    method: 'GET',
    path: '/reports/summary',
    summary: "What was bought in a period per day, week, month or strategy: `treasury-bot report`'s figures",
    requires: 'read',
    query: z.strictObject({ ...periodQuery, by: z.enum(GROUPINGS).default('day') }),
    answer: Report,
    async run(call) {
      const { period, timeZone } = periodOf(call);
      return buildReport(call.context.database, call.scope, period, call.query.by, timeZone);
    },
  }),
  defineOperation({
    id: 'listAudit',
    method: 'GET',
    path: '/audit',
    summary:
      'The audit log, newest first: who did what, when, to what (and of which account), with the state before and after',
    requires: 'administer',
    query: z.strictObject({
      since: z.iso.datetime({ offset: true }).optional(),
      limit: pageSize(1000, 100),
      cursor: cursorParam.optional(),
    }),
    answer: AuditPage,
    async run({ context, query, scope }) {
      const beforeId = query.cursor === undefined ? undefined : decodeCursor(query.cursor, IdCursor).before;
      const since = query.since === undefined ? undefined : new Date(query.since);
      // A token limited to some accounts reads the rows of their subjects only: those of no account (people,
      // tokens) are every account's business.
      const entries = await context.store.reads.auditEntries({
        scope,
        since,
        beforeId,
        limit: query.limit + 1,
      });
      const page = entries.slice(0, query.limit);
      const last = page.at(-1);
      return {
        entries: page,
        next: entries.length > query.limit && last ? encodeCursor({ before: last.id }) : null,
      };
    },
  }),
];
