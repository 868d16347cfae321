/**
 * `treasury-bot export orders`: one row per order placed in the period, ours and external, for the ledger.
 * Rows are read a page at a time in (placed at, id) order and written as they come, waiting for the
 * destination to drain, so a million orders take the memory of two pages (one read ahead).
 *
 * CSV is RFC 4180 through csv-stringify, formatted a batch of rows at a time (CRLF line ends, fields
 * quoted when they hold a comma, a quote or a line break), with a header row, in UTF-8 without a
 * byte-order mark unless `excel` asks for one (Excel reads BOM-less UTF-8 as the local code page). JSON is
 * one document, `{ "from", "to", "orders": [...] }`, written incrementally. Money is the text the service
 * sent, with its trailing zeros. A CSV cell of text from the service is escaped and, when it begins like a
 * formula, led by an apostrophe (src/printable.ts); JSON is data, written as it is.
 */
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { stringify } from 'csv-stringify/sync';
import {
  type AccountScope,
  type Database,
  type ExportedOrder,
  type OrderCursor,
  type OrderExportFilter,
  reportQueries,
} from '../db/index.js';
import { spreadsheetSafe } from '../printable.js';
import type { Period } from './periods.js';

export const EXPORT_FORMATS = ['csv', 'json'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/**
 * The columns, in order, each with where its text comes from; the account first, as an order id is one
 * account's. `ours`: written by us from checked values:
 * decimals formatted from a `Decimal` (a negative amount is a number to the spreadsheet, and a decimal
 * cannot carry a formula), instants, the origin, the version number, the status of our own set, the
 * discrepancy flag. `outside`: text from the service (ids, symbol, network, transaction id), a strategy
 * file or the settings (the account), written spreadsheet-safe in CSV. `strategyVersion` is the number of the strategy version the order's
 * cycle ran under (`treasury-bot strategy versions NAME`); empty for external orders and cycles from before
 * versions.
 */
const COLUMN_TEXT = {
  account: 'outside',
  orderId: 'outside',
  origin: 'ours',
  strategy: 'outside',
  strategyVersion: 'ours',
  slot: 'ours',
  quoteId: 'outside',
  placedAt: 'ours',
  symbol: 'outside',
  amount: 'ours',
  price: 'ours',
  totalCost: 'ours',
  totalFilled: 'ours',
  status: 'ours',
  pendingAt: 'ours',
  partialAt: 'ours',
  paidAt: 'ours',
  withdrawnAt: 'ours',
  settledAt: 'ours',
  expectedAmount: 'ours',
  receivedAmount: 'ours',
  withdrawalNetwork: 'outside',
  transactionId: 'outside',
  withdrawnAmount: 'ours',
  discrepancy: 'ours',
} as const satisfies Partial<Record<keyof ExportedOrder, 'ours' | 'outside'>>;

export const EXPORT_COLUMNS = Object.keys(COLUMN_TEXT) as readonly (keyof typeof COLUMN_TEXT)[];

/**
 * Rows per page. A page and the one read ahead are what the young generation must copy at every scavenge:
 * 1,000,000 orders peaked at 159 MB of RSS (twice) with pages of 1,000 and at 140-142 MB with 500, for the
 * same CPU; the extra statements run on the database's side, overlapped with the writing.
 */
export const EXPORT_PAGE_SIZE = 500;

/**
 * The service's digits: fiat in cents, prices in 4 decimals (its fxRate), crypto in 6. Decimal parsing on
 * the way in drops trailing zeros (`"1000.00"` is stored as 1000), so the export pads them back; a value
 * with more digits than its scale keeps them all: nothing is rounded here.
 */
const FIAT_DIGITS = 2;
const PRICE_DIGITS = 4;
const CRYPTO_DIGITS = 6;

/** Pads in place: each order object is fresh from its page and read once, and a copy per row is garbage. */
function withServiceDigits(order: ExportedOrder): ExportedOrder {
  order.amount = padScale(order.amount, FIAT_DIGITS);
  order.price = padScale(order.price, PRICE_DIGITS);
  order.totalCost = padNullable(order.totalCost, FIAT_DIGITS);
  order.expectedAmount = padNullable(order.expectedAmount, FIAT_DIGITS);
  order.receivedAmount = padNullable(order.receivedAmount, FIAT_DIGITS);
  order.totalFilled = padNullable(order.totalFilled, CRYPTO_DIGITS);
  order.withdrawnAmount = padNullable(order.withdrawnAmount, CRYPTO_DIGITS);
  return order;
}

function padNullable(value: string | null, scale: number): string | null {
  return value === null ? null : padScale(value, scale);
}

export function padScale(text: string, scale: number): string {
  const point = text.indexOf('.');
  const digits = point === -1 ? 0 : text.length - point - 1;
  if (digits >= scale) return text;
  return `${point === -1 ? `${text}.` : text}${'0'.repeat(scale - digits)}`;
}

export interface ExportOptions {
  format: ExportFormat;
  /** Whose orders: the CLI's `--account`, the console's person. */
  scope: AccountScope;
  excel?: boolean;
  pageSize?: number;
  /** The console's download of its orders page narrows the period's orders by its filters. */
  filter?: OrderExportFilter;
}

/**
 * Every order of the scope in the period, page by page. The next page is asked for as soon as a page
 * arrives (its last row is the next cursor), so the database reads it while this one is written: two pages
 * in memory at most.
 */
export async function* ordersOf(
  database: Database,
  scope: AccountScope,
  period: Period,
  pageSize = EXPORT_PAGE_SIZE,
  filter: OrderExportFilter = {},
): AsyncGenerator<ExportedOrder> {
  const queries = reportQueries(database);
  let next = queries.orderPage(scope, period, null, pageSize, filter);
  for (;;) {
    const page = await next;
    const last = page.at(-1);
    const more = page.length === pageSize && last !== undefined;
    if (more) {
      next = queries.orderPage(scope, period, last.cursor, pageSize, filter);
      // Awaited on the next turn; until then a failure must not count as unhandled (the caller may stop early).
      next.catch(() => {});
    }
    // Each row is let go as it is taken: while the last batch of a page is written, only the page read
    // ahead is held, and what the major collector finds live is what V8 grows the old generation from.
    for (let row = page.shift(); row !== undefined; row = page.shift()) yield withServiceDigits(row.order);
    if (!more) return;
  }
}

/**
 * One page of the scope's export rows, after `after` (null: from the period's start), and where the next page
 * starts (null after the last): the REST API's orders, page by page, as the export writes them.
 */
export async function orderPage(
  database: Database,
  scope: AccountScope,
  period: Period,
  after: OrderCursor | null,
  limit: number,
  filter: OrderExportFilter = {},
): Promise<{ orders: ExportedOrder[]; next: OrderCursor | null }> {
  // One row more than the page: whether a next page exists is known without asking for an empty one.
  const rows = await reportQueries(database).orderPage(scope, period, after, limit + 1, filter);
  const page = rows.slice(0, limit);
  return {
    orders: page.map((row) => withServiceDigits(row.order)),
    next: rows.length > limit ? (page.at(-1)?.cursor ?? null) : null,
  };
}

/** Writes the export to `destination` (not ended); resolves with the number of orders written. */
export async function exportOrders(
  database: Database,
  period: Period,
  destination: Writable,
  options: ExportOptions,
): Promise<number> {
  const orders = ordersOf(database, options.scope, period, options.pageSize, options.filter);
  return options.format === 'csv'
    ? writeCsv(orders, destination, options.excel === true)
    : writeJson(orders, period, destination);
}

async function write(destination: Writable, chunk: string): Promise<void> {
  if (!destination.write(chunk)) await once(destination, 'drain');
}

function csvCell(column: (typeof EXPORT_COLUMNS)[number], value: unknown): unknown {
  return typeof value === 'string' && COLUMN_TEXT[column] !== 'ours' ? spreadsheetSafe(value) : value;
}

/** Rows formatted per batch: one write of about 150 kB instead of one per row. */
const CSV_BATCH = 500;

async function writeCsv(
  orders: AsyncIterable<ExportedOrder>,
  destination: Writable,
  excel: boolean,
): Promise<number> {
  let batch: unknown[][] = [];
  let first = true;
  const flush = async () => {
    const text = stringify(batch, {
      header: first,
      columns: [...EXPORT_COLUMNS],
      record_delimiter: 'windows',
      bom: excel && first,
      cast: { boolean: (value) => (value ? 'true' : 'false') },
    });
    first = false;
    batch = [];
    await write(destination, text);
  };
  let count = 0;
  for await (const order of orders) {
    batch.push(EXPORT_COLUMNS.map((column) => csvCell(column, order[column])));
    count++;
    if (batch.length >= CSV_BATCH) await flush();
  }
  // Also the header alone, for a period without orders.
  await flush();
  return count;
}

async function writeJson(
  orders: AsyncIterable<ExportedOrder>,
  period: Period,
  destination: Writable,
): Promise<number> {
  const head = { from: period.start.toISOString(), to: period.end.toISOString() };
  await write(destination, `${JSON.stringify(head).slice(0, -1)},"orders":[`);
  let count = 0;
  for await (const order of orders) {
    await write(destination, `${count === 0 ? '\n' : ',\n'}${JSON.stringify(order)}`);
    count++;
  }
  await write(destination, '\n]}\n');
  return count;
}
