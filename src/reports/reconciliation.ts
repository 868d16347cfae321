/**
 * `treasury-bot reconcile-report`: does what we recorded for a period agree with the service, three ways.
 *
 * 1. Orders: our orders placed in the period against the service's order list for the same period; an
 *    order on one side only, or with other figures (symbol, amount, price, quoteId), is a difference.
 * 2. Settlement: for each of our orders, the fiat the service expects against the quote's cost and against
 *    what it received once paid, and the crypto filled against what was withdrawn, with the transaction.
 *    An order still settling is listed as open, not as a difference.
 * 3. Balance: how the service's balance snapshots moved over the period against how our orders' recorded
 *    settlement states say they should have moved. The balance model is the service's as assumed (and as
 *    the sandbox implements it): an order not fully paid holds its cost of credit (`credit.used`), a partial
 *    payment waits as fiat balance, a paid order's crypto waits as crypto balance until it is withdrawn.
 *    Snapshots are taken every `tracking.balance.intervalMs` and our states are as tracking recorded them,
 *    so an order that moved within a poll of a snapshot can show as a timing difference; re-run the report
 *    over a period that ends at a quiet moment before looking further.
 *
 * Each account is reconciled on its own, against its own service (the orders listed with its client, so
 * with its token at its address), with its own rows and balance snapshots: an order id is one account's.
 *
 * Nothing here writes: the report is a reading, safe to repeat.
 */
import type { OrderListItem, PurchaseClient } from '../api/index.js';
import type { Database, ExportedOrder } from '../db/index.js';
import { oneAccount, reportQueries } from '../db/index.js';
import { Decimal } from '../money.js';
import { ordersOf } from './order-export.js';
import type { Period } from './periods.js';

export interface Difference {
  account: string;
  check: 'orders' | 'settlement' | 'balance';
  kind: string;
  orderId: string | null;
  detail: string;
}

export interface SettlementLine {
  account: string;
  orderId: string;
  status: string;
  expectedFiat: string | null;
  totalCost: string | null;
  receivedFiat: string | null;
  filledCrypto: string | null;
  withdrawnCrypto: string | null;
  network: string | null;
  transactionId: string | null;
}

export interface BalanceFigures {
  takenAt: string;
  fiatBalance: string;
  cryptoBalance: string;
  creditUsed: string;
}

/** One account's reconciliation. */
export interface Reconciliation {
  account: string;
  from: Date;
  to: Date;
  agrees: boolean;
  orders: { ours: number; service: number; matched: number };
  settlement: { settled: number; open: number; lines: SettlementLine[] };
  balance: {
    start: BalanceFigures | null;
    end: BalanceFigures | null;
    change: { fiatBalance: string; cryptoBalance: string; creditUsed: string } | null;
    expectedChange: { fiatBalance: string; cryptoBalance: string; creditUsed: string } | null;
  };
  differences: Difference[];
}

/** Every account's reconciliation of one period; it agrees when each of them does. */
export interface ReconciliationReport {
  from: Date;
  to: Date;
  agrees: boolean;
  accounts: Reconciliation[];
}

/** An account as the reconciliation reaches it: its name and a client of its own service. */
export interface ReconciledAccount {
  name: string;
  client: PurchaseClient;
}

/** Pages of 100 read from the service at most: a million orders. */
const MAX_SERVICE_PAGES = 10_000;
const PAID = new Set(['paid', 'withdrawn', 'settled']);
const WITHDRAWN = new Set(['withdrawn', 'settled']);

/** Each account against its own service, the accounts side by side (each service paces its own requests). */
export async function reconcileAccounts(
  database: Database,
  accounts: readonly ReconciledAccount[],
  period: Period,
): Promise<ReconciliationReport> {
  const reconciled = await Promise.all(accounts.map((account) => reconcilePeriod(database, account, period)));
  return {
    from: period.start,
    to: period.end,
    agrees: reconciled.every((one) => one.agrees),
    accounts: reconciled,
  };
}

export async function reconcilePeriod(
  database: Database,
  { name: account, client }: ReconciledAccount,
  period: Period,
): Promise<Reconciliation> {
  const differences: Difference[] = [];
  const ours = new Map<string, ExportedOrder>();
  for await (const order of ordersOf(database, oneAccount(account), period)) ours.set(order.orderId, order);
  const service = await serviceOrders(client, period);

  let matched = 0;
  for (const [id, theirs] of service) {
    const mine = ours.get(id);
    if (!mine) {
      differences.push({
        account,
        check: 'orders',
        kind: 'missing_in_records',
        orderId: id,
        detail: `the service has order ${id} (${theirs.symbol} ${theirs.amount.toFixed()} at ${theirs.price.toFixed()}, ${theirs.timestamp.toISOString()}, quoteId ${theirs.quoteId ?? '-'}) and our records do not`,
      });
      continue;
    }
    matched++;
    for (const figure of figuresDiffering(mine, theirs)) {
      differences.push({ account, check: 'orders', kind: 'figures_differ', orderId: id, detail: figure });
    }
  }
  for (const id of ours.keys()) {
    if (!service.has(id)) {
      differences.push({
        account,
        check: 'orders',
        kind: 'missing_at_service',
        orderId: id,
        detail: `our records have order ${id} and the service's order list for the period does not`,
      });
    }
  }

  const lines: SettlementLine[] = [];
  let settled = 0;
  for (const order of ours.values()) {
    lines.push(settlementLine(order));
    if (order.status === 'settled') settled++;
    differences.push(...settlementDifferences(order));
  }

  const balance = await balanceCheck(database, account, period, differences);
  return {
    account,
    from: period.start,
    to: period.end,
    agrees: differences.length === 0,
    orders: { ours: ours.size, service: service.size, matched },
    settlement: { settled, open: ours.size - settled, lines },
    balance,
    differences,
  };
}

/** The service's orders of [start, end): its list filters inclusively, so the end is checked here. */
async function serviceOrders(client: PurchaseClient, period: Period): Promise<Map<string, OrderListItem>> {
  const found = new Map<string, OrderListItem>();
  const to = new Date(period.end.getTime() - 1);
  for (let page = 1; page <= MAX_SERVICE_PAGES; page++) {
    const answer = await client.listOrders({ from: period.start, to, limit: 100, page });
    for (const order of answer.data) {
      if (order.timestamp >= period.start && order.timestamp < period.end) found.set(order.id, order);
    }
    if (page >= answer.pagination.totalPages || answer.data.length === 0) return found;
  }
  throw new Error(
    `the service lists more than ${MAX_SERVICE_PAGES} pages of orders for the period: reconcile a shorter one`,
  );
}

function figuresDiffering(mine: ExportedOrder, theirs: OrderListItem): string[] {
  const differing: string[] = [];
  const compare = (field: string, ours: string | null, service: string | undefined, same: boolean) => {
    if (!same)
      differing.push(
        `order ${mine.orderId}: ${field} is ${service ?? '-'} at the service, ${ours ?? '-'} in our records`,
      );
  };
  compare('symbol', mine.symbol, theirs.symbol, mine.symbol === theirs.symbol);
  compare('amount', mine.amount, theirs.amount.toFixed(), theirs.amount.eq(mine.amount));
  compare('price', mine.price, theirs.price.toFixed(), theirs.price.eq(mine.price));
  if (theirs.quoteId !== undefined) {
    compare(
      'quoteId',
      mine.quoteId,
      theirs.quoteId,
      mine.quoteId === null || mine.quoteId === theirs.quoteId,
    );
  }
  return differing;
}

function settlementLine(order: ExportedOrder): SettlementLine {
  return {
    account: order.account,
    orderId: order.orderId,
    status: order.status,
    expectedFiat: order.expectedAmount,
    totalCost: order.totalCost,
    receivedFiat: order.receivedAmount,
    filledCrypto: order.totalFilled,
    withdrawnCrypto: order.withdrawnAmount,
    network: order.withdrawalNetwork,
    transactionId: order.transactionId,
  };
}

const same = (a: string | null, b: string | null) => a !== null && b !== null && new Decimal(a).eq(b);

function settlementDifferences(order: ExportedOrder): Difference[] {
  const found: Difference[] = [];
  const add = (kind: string, detail: string) =>
    found.push({
      account: order.account,
      check: 'settlement',
      kind,
      orderId: order.orderId,
      detail: `order ${order.orderId}: ${detail}`,
    });
  const { expectedAmount, receivedAmount, totalCost, totalFilled, withdrawnAmount } = order;
  if (
    order.origin === 'cycle' &&
    expectedAmount !== null &&
    totalCost !== null &&
    !same(expectedAmount, totalCost)
  ) {
    add('expected_differs', `the service expects ${expectedAmount} fiat, the quote cost ${totalCost}`);
  }
  if (PAID.has(order.status) && !same(receivedAmount, expectedAmount)) {
    const gap =
      receivedAmount !== null && expectedAmount !== null
        ? ` (${new Decimal(receivedAmount).minus(expectedAmount).toFixed()})`
        : '';
    add(
      'fiat_received_differs',
      `${order.status} with ${receivedAmount ?? 'no'} fiat received of ${expectedAmount ?? 'an unknown'} expected${gap}`,
    );
  }
  if (WITHDRAWN.has(order.status)) {
    if (totalFilled !== null && !same(withdrawnAmount, totalFilled)) {
      add('crypto_withdrawn_differs', `${withdrawnAmount ?? 'no'} crypto withdrawn of ${totalFilled} filled`);
    }
    if (order.transactionId === null)
      add('no_transaction', `${order.status} without a withdrawal transaction id`);
  }
  return found;
}

async function balanceCheck(
  database: Database,
  account: string,
  period: Period,
  differences: Difference[],
): Promise<Reconciliation['balance']> {
  const queries = reportQueries(database);
  const start =
    (await queries.snapshotAtOrBefore(account, period.start)) ??
    (await queries.firstSnapshotFrom(account, period.start));
  const end = await queries.snapshotAtOrBefore(account, new Date(period.end.getTime() - 1));
  if (start === null || end === null || start.takenAt >= end.takenAt) {
    differences.push({
      account,
      check: 'balance',
      kind: 'balance_unverified',
      orderId: null,
      detail: `fewer than two balance snapshots cover the period: the balance could not be checked (snapshots are taken while \`run\` tracks orders with tracking.balance.enabled)`,
    });
    return { start, end, change: null, expectedChange: null };
  }
  const [expectedStart, expectedEnd] = await Promise.all([
    queries.expectedBalance(account, new Date(start.takenAt)),
    queries.expectedBalance(account, new Date(end.takenAt)),
  ]);
  const fields = ['fiatBalance', 'cryptoBalance', 'creditUsed'] as const;
  const change = Object.fromEntries(
    fields.map((field) => [field, new Decimal(end[field]).minus(start[field]).toFixed()]),
  ) as Record<(typeof fields)[number], string>;
  const expectedChange = Object.fromEntries(
    fields.map((field) => [field, new Decimal(expectedEnd[field]).minus(expectedStart[field]).toFixed()]),
  ) as Record<(typeof fields)[number], string>;
  for (const field of fields) {
    if (!new Decimal(change[field]).eq(expectedChange[field])) {
      differences.push({
        account,
        check: 'balance',
        kind: 'balance_change_differs',
        orderId: null,
        detail: `${field} moved by ${change[field]} between the snapshots of ${start.takenAt} and ${end.takenAt}; our orders account for ${expectedChange[field]}`,
      });
    }
  }
  return { start, end, change, expectedChange };
}
