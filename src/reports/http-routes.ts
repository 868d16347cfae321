/**
 * The report figures as JSON (and the ledger as CSV) on the ops listener, for spreadsheets and BI tools:
 *
 *   GET /api/reports/summary?from=DATE&to=DATE[&by=day|week|month|strategy][&tz=ZONE]
 *   GET /api/reports/orders?from=DATE&to=DATE[&tz=ZONE][&format=csv|json]
 *   GET /api/reports/reconciliation?from=DATE&to=DATE[&tz=ZONE]
 *
 * The same computations and argument checks as the commands; a bad argument is a 400 naming it. They carry
 * the treasury's figures, so they are registered in the console's scope (src/console/server.ts), whose
 * checks every request passes: a session of a person with the route's `requires` (the summary and the ledger
 * `read`; the reconciliation `operate`, as it pages through the service's orders on the replica's request
 * budget, where a 429 pauses its purchases). Each answers with the rows of the accounts the request's person
 * may see, and reconciles each of them against its own service.
 */
import { PassThrough } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { PurchaseClient } from '../api/index.js';
import { type AccountScope, type Database, inScope } from '../db/index.js';
import { isDecimal, toDecimalText } from '../money.js';
import { EXPORT_FORMATS, type ExportFormat, type ExportOptions, exportOrders } from './order-export.js';
import {
  checkPeriod,
  checkTimeZone,
  GROUPINGS,
  type Grouping,
  type Period,
  parseReportInstant,
  ReportArgumentError,
} from './periods.js';
import { reconcileAccounts } from './reconciliation.js';
import { buildReport } from './summary.js';

export interface ReportRouteDeps {
  database: Database;
  /** Each account's service, which the reconciliation reads; none in `console` without a service. */
  accounts: ReadonlyMap<string, { client: PurchaseClient }>;
  /** reports.timezone: the zone of dates and periods when a request names none. */
  timeZone: string;
  /** The accounts the request's person may see. */
  scopeOf(request: FastifyRequest): AccountScope;
}

type Query = Record<string, string | undefined>;

function rangeOf(query: Query, defaultZone: string): { period: Period; timeZone: string } {
  const timeZone = checkTimeZone('tz', query.tz ?? defaultZone);
  const from = parseReportInstant('from', query.from ?? '', timeZone);
  const to = parseReportInstant('to', query.to ?? '', timeZone);
  return { period: checkPeriod(from, to), timeZone };
}

function choice<T extends string>(
  name: string,
  value: string | undefined,
  choices: readonly T[],
  fallback: T,
): T {
  if (value === undefined) return fallback;
  if ((choices as readonly string[]).includes(value)) return value as T;
  throw new ReportArgumentError(
    `${name} must be one of ${choices.join(', ')} (got ${JSON.stringify(value)})`,
  );
}

/** Decimals as text and instants as ISO 8601, as `--json` prints them. */
function plain(value: unknown): unknown {
  if (isDecimal(value)) return toDecimalText(value);
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map(plain);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, plain(item)]));
  }
  return value;
}

async function answer(reply: FastifyReply, work: () => Promise<unknown>) {
  try {
    return reply.send(plain(await work()));
  } catch (error) {
    if (error instanceof ReportArgumentError) return reply.code(400).send({ error: error.message });
    throw error;
  }
}

export function registerReportRoutes(app: FastifyInstance, deps: ReportRouteDeps): void {
  app.get('/api/reports/summary', { config: { requires: 'read' } }, (request, reply) =>
    answer(reply, () => {
      const query = request.query as Query;
      const { period, timeZone } = rangeOf(query, deps.timeZone);
      const by = choice<Grouping>('by', query.by, GROUPINGS, 'day');
      return buildReport(deps.database, deps.scopeOf(request), period, by, timeZone);
    }),
  );

  app.get('/api/reports/reconciliation', { config: { requires: 'operate' } }, (request, reply) =>
    answer(reply, () => {
      const { period } = rangeOf(request.query as Query, deps.timeZone);
      const scope = deps.scopeOf(request);
      const accounts = [...deps.accounts]
        .filter(([name]) => inScope(scope, name))
        .map(([name, { client }]) => ({ name, client }));
      if (accounts.length === 0) {
        throw new ReportArgumentError(
          'the reconciliation reads the purchase service, and this console has none: set TREASURY_API_URL and its token',
        );
      }
      return reconcileAccounts(deps.database, accounts, period);
    }),
  );

  app.get('/api/reports/orders', { config: { requires: 'read' } }, async (request, reply) => {
    const query = request.query as Query;
    let period: Period;
    let format: ExportFormat;
    try {
      period = rangeOf(query, deps.timeZone).period;
      format = choice('format', query.format, EXPORT_FORMATS, 'json');
    } catch (error) {
      if (error instanceof ReportArgumentError) return reply.code(400).send({ error: error.message });
      throw error;
    }
    return sendOrderExport(reply, deps.database, period, { format, scope: deps.scopeOf(request) });
  });
}

/**
 * The export as an HTTP answer (this route, and the console's download of its orders page), streamed as it
 * is read: a failure after the first bytes can only cut the body short.
 */
export function sendOrderExport(
  reply: FastifyReply,
  database: Database,
  period: Period,
  options: ExportOptions,
): FastifyReply {
  const body = new PassThrough();
  exportOrders(database, period, body, options).then(
    () => body.end(),
    (error: unknown) => body.destroy(error instanceof Error ? error : new Error(String(error))),
  );
  return reply
    .type(options.format === 'csv' ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8')
    .send(body);
}
