/**
 * The read-only statements behind reports, the accounting export and the reconciliation report. They read
 * orders (ours and external) by the service's timestamp, the instant the service says the order was placed,
 * so a period here is the same period as the service's order list.
 *
 * Money leaves as the text PostgreSQL stored (`numeric::text`): exactly the digits the service sent. An
 * order's fiat cost is the quote's `totalCost` for our orders and the tracking's expected amount (or the
 * order amount) for external ones; its crypto quantity is the quote's `totalFilled` for ours and the
 * withdrawn amount, once known, for external ones.
 *
 * Every statement reads one account's rows or a scope's (src/db/account-scope.ts), and every row it returns
 * names its account: an order id, a quote id and a balance are one account's.
 */
import { sql } from 'drizzle-orm';
import { type AccountScope, accountsParameter } from './account-scope.js';
import { type DrizzleExecutor, rowsOf } from './connection.js';
import type { Database } from './database.js';
import { connectionOf } from './database.js';
import type { Period } from './repositories/spend-figures.js';

/** One order as the export writes it: every value text (or null), instants as ISO 8601 UTC. */
export interface ExportedOrder {
  account: string;
  orderId: string;
  origin: string;
  strategy: string | null;
  strategyVersion: string | null;
  slot: string | null;
  quoteId: string | null;
  placedAt: string;
  symbol: string;
  amount: string;
  price: string;
  totalCost: string | null;
  totalFilled: string | null;
  status: string;
  pendingAt: string | null;
  partialAt: string | null;
  paidAt: string | null;
  withdrawnAt: string | null;
  settledAt: string | null;
  expectedAmount: string | null;
  receivedAmount: string | null;
  withdrawalNetwork: string | null;
  transactionId: string | null;
  withdrawnAmount: string | null;
  discrepancy: boolean;
}

/** Where the next page starts: the last row's exact timestamp (as PostgreSQL text) and id. */
export interface OrderCursor {
  timestamp: string;
  id: string;
}

/** Sums of one (period bucket, strategy) pair; decimal text. `bucket` counts from 1 as width_bucket does. */
export interface OrderAggregate {
  bucket: number;
  account: string;
  strategy: string | null;
  orders: number;
  spent: string;
  bought: string;
  /** The cost of the orders whose quantity is known: the numerator of the average cost. */
  spentWithQuantity: string;
  ordersWithoutQuantity: number;
  lowestPrice: string;
  highestPrice: string;
  settledSpent: string;
  unsettledSpent: string;
  settledOrders: number;
}

export interface SkipAggregate {
  bucket: number;
  account: string;
  strategy: string;
  reason: string;
  cycles: number;
}

export interface QuotesSeen {
  account: string;
  strategy: string;
  kind: string;
  hasPriceThreshold: boolean;
  quotes: number;
  priceSum: string;
}

export interface BalanceSnapshotFigures {
  takenAt: string;
  fiatBalance: string;
  cryptoBalance: string;
  creditUsed: string;
}

/** What our orders' recorded settlement states add up to at an instant, in the balance's terms. */
export interface ExpectedBalance {
  creditUsed: string;
  fiatBalance: string;
  cryptoBalance: string;
}

const iso = (expression: string) =>
  `to_char(${expression} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

const COST = 'coalesce(c.total_cost, o.expected_amount, o.amount)';
// An external order's quantity is known once the crypto left (before, the service reports 0 withdrawn).
const QUANTITY = `coalesce(q.total_filled, case when o.status in ('withdrawn', 'settled') then o.withdrawn_amount end)`;
const ORDER_JOINS = `orders o
  left join cycles c on c.id = o.cycle_id
  left join quotes q on q.id = c.quote_record_id`;

/** Rows as arrays of driver values, in select-list order. */
type RawRows = unknown[][];

/**
 * A report statement written as SQL text with `$n` parameters, run through drizzle's `sql` template and the
 * public `execute`. Its outer select list is aliased c0, c1, … so each row reads back as an array in
 * select-list order: several columns would otherwise share a name (`text`, `coalesce`), and a row object
 * keeps only one of each.
 */
function defineRawStatement<T>(
  _name: string,
  text: string,
  params: readonly string[],
  map: (rows: RawRows) => T,
): { execute(executor: DrizzleExecutor, values: Record<string, unknown>): Promise<T> } {
  const pieces = positional(text).split(/\$(\d+)/);
  return {
    async execute(executor, values) {
      const chunks = pieces.map((piece, index) =>
        index % 2 === 0 ? sql.raw(piece) : sql`${values[params[Number(piece) - 1]!]}`,
      );
      const rows = rowsOf(await executor.execute(sql.join(chunks)));
      return map(rows.map((row) => Object.values(row)));
    },
  };
}

/** Appends `as cN` to each column of the first select list at the outermost level of `text`. */
function positional(text: string): string {
  let depth = 0;
  let start = -1;
  const cuts: number[] = [];
  for (let at = 0; at < text.length; at++) {
    const char = text[at];
    if (char === '(') depth++;
    else if (char === ')') depth--;
    else if (depth === 0) {
      if (start < 0 && /^select\s/i.test(text.slice(at, at + 7)) && !/\w/.test(text[at - 1] ?? ' ')) {
        start = at + 6;
      } else if (start >= 0 && char === ',') cuts.push(at);
      else if (start >= 0 && /^\sfrom\s/i.test(text.slice(at, at + 6))) {
        cuts.push(at);
        break;
      }
    }
  }
  let result = text;
  for (let index = cuts.length - 1; index >= 0; index--) {
    const cut = cuts[index]!;
    result = `${result.slice(0, cut)} as c${index}${result.slice(cut)}`;
  }
  return result;
}

const text = (value: unknown): string | null =>
  value === null || value === undefined ? null : String(value);
const required = (value: unknown): string => String(value ?? '');

/**
 * ISO 8601 UTC from PostgreSQL's text form of a timestamptz (`2026-03-08 05:00:00.123456+00`, the offset in
 * hours or hours:minutes): formatting in the database (to_char) cost it a sixth of the export's time.
 */
function isoOf(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value.toISOString();
  const raw = String(value);
  const utc = isoOfUtcText(raw);
  if (utc !== undefined) return utc;
  const text = raw.replace(' ', 'T').replace(/([+-]\d{2})$/, '$1:00');
  const instant = new Date(text);
  if (Number.isNaN(instant.getTime()))
    throw new RangeError(`unreadable timestamp from the database: ${text}`);
  return instant.toISOString();
}

/**
 * The common case read by hand, a session in UTC (`2026-03-08 05:00:00.123456+00`): the export formats
 * seven timestamps per order and the parse through Date was a fifth of its time. The milliseconds are
 * truncated, as Date truncates digits beyond them; anything else (another offset, a year beyond 9999, BC)
 * is undefined and goes through Date.
 */
function isoOfUtcText(text: string): string | undefined {
  const length = text.length;
  const fractionDigits = length - 23; // after `YYYY-MM-DD HH:MM:SS.` and before `+00`
  const plain = length === 22;
  if (!plain && (fractionDigits < 1 || fractionDigits > 6 || text.charCodeAt(19) !== DOT)) return undefined;
  if (text.charCodeAt(10) !== SPACE || text.charCodeAt(4) !== DASH || !text.endsWith('+00')) return undefined;
  const millis = plain ? '000' : text.slice(20, 20 + Math.min(fractionDigits, 3)).padEnd(3, '0');
  return `${text.slice(0, 10)}T${text.slice(11, 19)}.${millis}Z`;
}

const DOT = 46;
const SPACE = 32;
const DASH = 45;

const selectOrderPage = defineRawStatement(
  'report_order_page',
  `select o.id::text, o.service_timestamp::text, o.service_order_id, o.origin, c.strategy, c.strategy_version::text,
     c.slot::text, o.quote_id, o.symbol, o.amount::text, o.price::text,
     (${COST})::text, (${QUANTITY})::text, o.status,
     coalesce(ev.pending_at, o.created_at)::text, ev.partial_at::text, ev.paid_at::text,
     ev.withdrawn_at::text, coalesce(ev.settled_at, o.settled_at)::text,
     o.expected_amount::text, o.received_amount::text,
     o.last_tracking->'withdrawal'->>'network', o.last_tracking->'withdrawal'->>'transactionId',
     o.withdrawn_amount::text,
     (c.discrepancy is not null or coalesce(ev.anomalies, 0) > 0), o.account
   from ${ORDER_JOINS}
     left join lateral (
       select min(e.recorded_at) filter (where e.to_status = 'pending') as pending_at,
              min(e.recorded_at) filter (where e.to_status = 'partial') as partial_at,
              min(e.recorded_at) filter (where e.to_status = 'paid') as paid_at,
              min(e.recorded_at) filter (where e.to_status = 'withdrawn') as withdrawn_at,
              min(e.recorded_at) filter (where e.to_status = 'settled') as settled_at,
              count(e.anomaly) as anomalies
       from settlement_events e where e.order_id = o.id) ev on true
   where o.service_timestamp >= $1 and o.service_timestamp < $2
     and (o.service_timestamp, o.id) > ($3::timestamptz, $4::bigint)
     and ($6::text is null or c.strategy = $6::text)
     and ($7::text is null or o.status = $7::text)
     and ($8::text[] is null or o.account = any($8::text[]))
   order by o.service_timestamp, o.id
   limit $5`,
  ['from', 'to', 'afterTimestamp', 'afterId', 'limit', 'strategy', 'status', 'accounts'],
  (rows: RawRows) =>
    rows.map((row) => ({
      cursor: { id: required(row[0]), timestamp: required(row[1]) },
      order: {
        account: required(row[25]),
        orderId: required(row[2]),
        origin: required(row[3]),
        strategy: text(row[4]),
        strategyVersion: text(row[5]),
        slot: isoOf(row[6]),
        quoteId: text(row[7]),
        placedAt: required(isoOf(row[1])),
        symbol: required(row[8]),
        amount: required(row[9]),
        price: required(row[10]),
        totalCost: text(row[11]),
        totalFilled: text(row[12]),
        status: required(row[13]),
        pendingAt: isoOf(row[14]),
        partialAt: isoOf(row[15]),
        paidAt: isoOf(row[16]),
        withdrawnAt: isoOf(row[17]),
        settledAt: isoOf(row[18]),
        expectedAmount: text(row[19]),
        receivedAmount: text(row[20]),
        withdrawalNetwork: text(row[21]),
        transactionId: text(row[22]),
        withdrawnAmount: text(row[23]),
        discrepancy: row[24] === true || row[24] === 't',
      } satisfies ExportedOrder,
    })),
);

const selectOrderAggregates = defineRawStatement(
  'report_order_aggregates',
  `select width_bucket(o.service_timestamp, $3::timestamptz[]), o.account, c.strategy, count(*)::int,
     coalesce(sum(${COST}), 0)::text, coalesce(sum(${QUANTITY}), 0)::text,
     coalesce(sum(${COST}) filter (where ${QUANTITY} is not null), 0)::text,
     (count(*) filter (where ${QUANTITY} is null))::int,
     min(o.price)::text, max(o.price)::text,
     coalesce(sum(${COST}) filter (where o.status = 'settled'), 0)::text,
     coalesce(sum(${COST}) filter (where o.status <> 'settled'), 0)::text,
     (count(*) filter (where o.status = 'settled'))::int
   from ${ORDER_JOINS}
   where o.service_timestamp >= $1 and o.service_timestamp < $2
     and ($4::text[] is null or o.account = any($4::text[]))
   group by 1, 2, 3`,
  ['from', 'to', 'bounds', 'accounts'],
  (rows: RawRows): OrderAggregate[] =>
    rows.map((row) => ({
      bucket: Number(row[0]),
      account: required(row[1]),
      strategy: text(row[2]),
      orders: Number(row[3]),
      spent: required(row[4]),
      bought: required(row[5]),
      spentWithQuantity: required(row[6]),
      ordersWithoutQuantity: Number(row[7]),
      lowestPrice: required(row[8]),
      highestPrice: required(row[9]),
      settledSpent: required(row[10]),
      unsettledSpent: required(row[11]),
      settledOrders: Number(row[12]),
    })),
);

const selectSkipAggregates = defineRawStatement(
  'report_skip_aggregates',
  `select width_bucket(slot, $3::timestamptz[]), account, strategy, coalesce(reason_code, '(none)'), count(*)::int
   from cycles
   where state = 'skipped' and slot >= $1 and slot < $2
     and ($4::text[] is null or account = any($4::text[]))
   group by 1, 2, 3, 4`,
  ['from', 'to', 'bounds', 'accounts'],
  (rows: RawRows): SkipAggregate[] =>
    rows.map((row) => ({
      bucket: Number(row[0]),
      account: required(row[1]),
      strategy: required(row[2]),
      reason: required(row[3]),
      cycles: Number(row[4]),
    })),
);

const selectQuotesSeen = defineRawStatement(
  'report_quotes_seen',
  `select c.account, s.name, s.kind, (s.kind = 'threshold' or s.config ? 'maxPrice' or s.config ? 'buyBelow'),
     count(q.id)::int, coalesce(sum(q.price), 0)::text
   from strategies s
     join cycles c on c.strategy = s.name
     join quotes q on q.cycle_id = c.id
   where q.received_at >= $1 and q.received_at < $2
     and ($3::text[] is null or c.account = any($3::text[]))
   group by c.account, s.name, s.kind, s.config`,
  ['from', 'to', 'accounts'],
  (rows: RawRows): QuotesSeen[] =>
    rows.map((row) => ({
      account: required(row[0]),
      strategy: required(row[1]),
      kind: required(row[2]),
      hasPriceThreshold: row[3] === true || row[3] === 't',
      quotes: Number(row[4]),
      priceSum: required(row[5]),
    })),
);

const selectStrategyAccounts = defineRawStatement(
  'report_strategy_accounts',
  `select distinct account from strategies
   where $1::text[] is null or account = any($1::text[])
   order by account`,
  ['accounts'],
  (rows: RawRows) => rows.map((row) => required(row[0])),
);

const selectSnapshotAtOrBefore = selectNearestSnapshot('report_balance_at_or_before', 'at or before');
const selectFirstSnapshotFrom = selectNearestSnapshot('report_balance_first_from', 'at or after');

/** The account's balance snapshot nearest an instant on one side: the last one taken by then, or the first since. */
function selectNearestSnapshot(name: string, side: 'at or before' | 'at or after') {
  const [compare, direction] = side === 'at or before' ? ['<=', 'desc'] : ['>=', 'asc'];
  return defineRawStatement(
    name,
    `select ${iso('taken_at')}, fiat_balance::text, crypto_balance::text, credit_used::text
     from balance_snapshots where account = $2 and taken_at ${compare} $1
     order by taken_at ${direction}, id ${direction} limit 1`,
    ['at', 'account'],
    (rows: RawRows) => toSnapshot(rows[0]),
  );
}

function toSnapshot(row: unknown[] | undefined): BalanceSnapshotFigures | null {
  if (!row) return null;
  return {
    takenAt: required(row[0]),
    fiatBalance: required(row[1]),
    cryptoBalance: required(row[2]),
    creditUsed: required(row[3]),
  };
}

/**
 * What one account's orders add up to. Each order's state at the instant is its last applied settlement report recorded by then (a report
 * flagged as an anomaly was not applied). The sums follow the service's balance model as assumed (see
 * src/reports/reconciliation.ts): unpaid orders hold credit, a partial payment waits as fiat, a paid order's
 * crypto waits until it is withdrawn.
 */
const selectExpectedBalance = defineRawStatement(
  'report_expected_balance',
  `with state as (
     select distinct on (e.order_id) e.order_id, e.to_status, e.received_amount
     from settlement_events e
     where e.recorded_at <= $1 and e.anomaly is null
     order by e.order_id, e.id desc)
   select coalesce(sum(${COST}) filter (where st.to_status in ('pending', 'partial')), 0)::text,
     coalesce(sum(st.received_amount) filter (where st.to_status = 'partial'), 0)::text,
     coalesce(sum(${QUANTITY}) filter (where st.to_status = 'paid'), 0)::text
   from state st join ${ORDER_JOINS} on o.id = st.order_id
   where o.account = $2`,
  ['at', 'account'],
  (rows: RawRows): ExpectedBalance => ({
    creditUsed: required(rows[0]?.[0] ?? '0'),
    fiatBalance: required(rows[0]?.[1] ?? '0'),
    cryptoBalance: required(rows[0]?.[2] ?? '0'),
  }),
);

/** Narrows the export to one strategy's orders, or to one settlement status (the console's filters). */
export interface OrderExportFilter {
  strategy?: string;
  status?: string;
}

export interface ReportQueries {
  /** Up to `limit` of the scope's orders placed in the period, after the cursor, in (placed at, id) order. */
  orderPage(
    scope: AccountScope,
    period: Period,
    after: OrderCursor | null,
    limit: number,
    filter?: OrderExportFilter,
  ): Promise<{ cursor: OrderCursor; order: ExportedOrder }[]>;
  /** `bounds`: the period's boundaries in order, first = period.start, last = period.end. */
  orderAggregates(scope: AccountScope, period: Period, bounds: readonly Date[]): Promise<OrderAggregate[]>;
  skipAggregates(scope: AccountScope, period: Period, bounds: readonly Date[]): Promise<SkipAggregate[]>;
  quotesSeen(scope: AccountScope, period: Period): Promise<QuotesSeen[]>;
  /** The accounts of the scope that some recorded strategy buys for, in name order. */
  strategyAccounts(scope: AccountScope): Promise<string[]>;
  snapshotAtOrBefore(account: string, at: Date): Promise<BalanceSnapshotFigures | null>;
  firstSnapshotFrom(account: string, at: Date): Promise<BalanceSnapshotFigures | null>;
  expectedBalance(account: string, at: Date): Promise<ExpectedBalance>;
}

const BEFORE_EVERYTHING: OrderCursor = { timestamp: '-infinity', id: '0' };

export function reportQueries(database: Database): ReportQueries {
  const db = connectionOf(database).drizzle;
  const range = (period: Period) => ({ from: period.start.toISOString(), to: period.end.toISOString() });
  const boundsText = (bounds: readonly Date[]) => `{${bounds.map((bound) => bound.toISOString()).join(',')}}`;
  return {
    orderPage: (scope, period, after, limit, filter = {}) => {
      const cursor = after ?? BEFORE_EVERYTHING;
      return selectOrderPage.execute(db, {
        ...range(period),
        afterTimestamp: cursor.timestamp,
        afterId: cursor.id,
        limit,
        strategy: filter.strategy ?? null,
        status: filter.status ?? null,
        accounts: accountsParameter(scope),
      });
    },
    orderAggregates: (scope, period, bounds) =>
      selectOrderAggregates.execute(db, {
        ...range(period),
        bounds: boundsText(bounds),
        accounts: accountsParameter(scope),
      }),
    skipAggregates: (scope, period, bounds) =>
      selectSkipAggregates.execute(db, {
        ...range(period),
        bounds: boundsText(bounds),
        accounts: accountsParameter(scope),
      }),
    quotesSeen: (scope, period) =>
      selectQuotesSeen.execute(db, { ...range(period), accounts: accountsParameter(scope) }),
    strategyAccounts: (scope) => selectStrategyAccounts.execute(db, { accounts: accountsParameter(scope) }),
    snapshotAtOrBefore: (account, at) =>
      selectSnapshotAtOrBefore.execute(db, { at: at.toISOString(), account }),
    firstSnapshotFrom: (account, at) =>
      selectFirstSnapshotFrom.execute(db, { at: at.toISOString(), account }),
    expectedBalance: (account, at) => selectExpectedBalance.execute(db, { at: at.toISOString(), account }),
  };
}
