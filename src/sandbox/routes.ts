/**
 * The service's routes as the sandbox serves them (balance, quotes, orders, webhooks), each through
 * serveWithFaults (route.ts) so that faults apply to it, and the control API under `/_sandbox` (faults,
 * stepping an order, an account's ledger, the accounts' credit, the request log), served plainly: tests must
 * be able to steer a sandbox that is failing. Service routes act on the account of the request's token.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ZodError } from 'zod';
import { Decimal } from '../money.js';
import { accountOf } from './accounts.js';
import { viewOrder } from './ledger.js';
import { SYMBOL } from './market.js';
import {
  badRequest,
  paginate,
  readBodyObject,
  readInstantParam,
  readIntParam,
  readStringParam,
  requireStringParam,
} from './protocol.js';
import { orderDetail, orderRecord, trackingRecord } from './records.js';
import { type RouteDeps, serve, serveWithFaults } from './route.js';
import { ORDER_STATUSES, type OrderStatus } from './types.js';

export function registerBalanceRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.get(
    '/client/balance',
    { config: { access: 'read' } },
    serveWithFaults(deps, 'balance', (request) => accountOf(request).balance()),
  );
}

/** Fiat amount: plain decimal with at most 2 places, so that totalCost ≤ amount can hold to the cent. */
const AMOUNT = /^\d{1,12}(\.\d{1,2})?$/;

export function registerQuoteRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.get(
    '/client/quote',
    { config: { access: 'read' } },
    serveWithFaults(deps, 'quote', (request) => {
      const query = request.query as Record<string, unknown>;
      const symbol = requireStringParam(query, 'symbols');
      if (symbol !== SYMBOL)
        throw badRequest(`unsupported symbols ${JSON.stringify(symbol)}; expected ${SYMBOL}`);
      const amountText = requireStringParam(query, 'amount');
      if (!AMOUNT.test(amountText)) {
        throw badRequest(
          `amount must be a positive decimal with at most 2 places (got ${JSON.stringify(amountText)})`,
        );
      }
      const amount = new Decimal(amountText);
      if (amount.isZero()) throw badRequest('amount must be greater than zero');
      const quote = accountOf(request).issueQuote(symbol, amount);
      return accountOf(request).quotes.toRecord(quote);
    }),
  );
}

const QUOTE_ID = /^[A-Za-z0-9]{8,9}$/;
/** fxRate per the reference: decimal text of 6 to 7 characters, e.g. "5.4321". */
const FX_RATE = /^(?=.{6,7}$)\d+\.\d+$/;

export function registerOrderRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.post(
    '/client/order',
    { config: { access: 'write' } },
    serveWithFaults(deps, 'createOrder', (request) => {
      const body = readBodyObject(request.body);
      const { quoteId, fxRate } = body;
      if (typeof quoteId !== 'string' || !QUOTE_ID.test(quoteId)) {
        throw badRequest('quoteId must be 8 to 9 letters or digits');
      }
      if (fxRate !== undefined && (typeof fxRate !== 'string' || !FX_RATE.test(fxRate))) {
        throw badRequest('fxRate must be decimal text of 6 to 7 characters, like "5.4321"');
      }
      return orderRecord(accountOf(request).createOrder(quoteId, fxRate));
    }),
  );

  app.get(
    '/client/orders',
    { config: { access: 'read' } },
    serveWithFaults(deps, 'listOrders', (request) => {
      const query = request.query as Record<string, unknown>;
      const limit = readIntParam(query, 'limit', { default: 20, min: 1, max: 100 });
      const page = readIntParam(query, 'offset', { default: 1, min: 1, max: 1_000_000 });
      const orders = accountOf(request).ledger.list({
        status: readStatus(query),
        symbol: readStringParam(query, 'symbol') || undefined,
        fromMs: readInstantParam(query, 'from'),
        toMs: readInstantParam(query, 'to'),
      });
      return paginate(orders, { page, limit }, orderDetail);
    }),
  );

  app.get(
    '/client/orders/:id',
    { config: { access: 'read' } },
    serveWithFaults(deps, 'getOrder', (request) =>
      orderDetail(accountOf(request).getOrder(orderId(request))),
    ),
  );

  app.get(
    '/client/orders/:id/tracking',
    { config: { access: 'read' } },
    serveWithFaults(deps, 'tracking', (request) =>
      trackingRecord(accountOf(request).getOrder(orderId(request))),
    ),
  );
}

function orderId(request: FastifyRequest): string {
  return (request.params as { id: string }).id;
}

function readStatus(query: Record<string, unknown>): OrderStatus | undefined {
  const status = readStringParam(query, 'status');
  if (status === undefined || status === '') return undefined;
  if (!(ORDER_STATUSES as readonly string[]).includes(status)) {
    throw badRequest(`status must be one of ${ORDER_STATUSES.join(', ')} (got ${JSON.stringify(status)})`);
  }
  return status as OrderStatus;
}

export function registerWebhookRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.post(
    '/client/webhook/config',
    { config: { access: 'write' } },
    serveWithFaults(deps, 'setWebhookConfig', (request) => {
      const body = readBodyObject(request.body);
      const url = readWebhookUrl(body.url);
      const webhook = readBodyObject(body.webhook);
      if (typeof webhook.methodId !== 'string') throw badRequest('webhook.methodId must be a string');
      if (typeof webhook.active !== 'boolean') throw badRequest('webhook.active must be a boolean');
      return accountOf(request).webhooks.configure(url, webhook.methodId, webhook.active);
    }),
  );

  app.get(
    '/client/webhook/config',
    { config: { access: 'read' } },
    serveWithFaults(deps, 'getWebhookConfig', (request) => accountOf(request).webhooks.config()),
  );

  // The reference gives this endpoint strict bounds (page >= 1, limit 1..100): outside them is a 400.
  app.get(
    '/client/webhook/:id/logs',
    { config: { access: 'read' } },
    serveWithFaults(deps, 'webhookLogsById', (request) => {
      const query = request.query as Record<string, unknown>;
      const page = readIntParam(query, 'page', { default: 1, min: 1, max: 1_000_000 });
      const limit = readIntParam(query, 'limit', { default: 20, min: 1, max: 100 });
      return accountOf(request).webhooks.logsPage({ page, limit }, (request.params as { id: string }).id);
    }),
  );

  // This one only documents defaults (page 1, pageSize 20), so out-of-range values are clamped, not refused.
  app.get(
    '/client/webhook/logs',
    { config: { access: 'read' } },
    serveWithFaults(deps, 'webhookLogs', (request) => {
      const query = request.query as Record<string, unknown>;
      const page = readIntParam(query, 'page', { default: 1, min: 1, max: 1_000_000, clamp: true });
      const limit = readIntParam(query, 'pageSize', { default: 20, min: 1, max: 100, clamp: true });
      return accountOf(request).webhooks.logsPage({ page, limit });
    }),
  );
}

function readWebhookUrl(value: unknown): string {
  if (typeof value !== 'string') throw badRequest('url must be a string');
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw badRequest('url must be an absolute http(s) URL');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw badRequest('url must be an absolute http(s) URL');
  }
  return value;
}

/** The control API: admin token only, never subject to injected faults. */
export function registerControlRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const admin = { config: { access: 'admin' as const } };

  app.get(
    '/_sandbox/faults',
    admin,
    serve(() => deps.faults.current()),
  );

  app.put(
    '/_sandbox/faults',
    admin,
    serve((request) => {
      try {
        deps.faults.replace(request.body ?? {});
      } catch (error) {
        if (error instanceof ZodError) throw badRequest(`invalid fault config: ${summarize(error)}`);
        throw error;
      }
      return deps.faults.current();
    }),
  );

  app.post(
    '/_sandbox/orders/:id/step',
    admin,
    serve((request) => {
      const id = (request.params as { id: string }).id;
      return orderDetail(deps.accounts.holding(id).step(id));
    }),
  );

  app.get(
    '/_sandbox/ledger',
    admin,
    serve((request) => ({
      orders: deps.accounts
        .named(request.query as Record<string, unknown>)
        .ledger.all()
        .map(viewOrder),
    })),
  );

  // Each account's credit line and holdings, as its own GET /client/balance answers them.
  app.get(
    '/_sandbox/accounts',
    admin,
    serve(() => ({
      accounts: deps.accounts.all.map((account) => ({
        name: account.name,
        orders: account.ledger.all().length,
        balance: account.balance(),
      })),
    })),
  );

  app.get(
    '/_sandbox/requests',
    admin,
    serve(() => ({ requests: deps.accounts.log.list() })),
  );
}

function summarize(error: ZodError): string {
  return error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ');
}
