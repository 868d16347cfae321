import type { FastifyInstance, FastifyRequest } from 'fastify';
import { badRequest } from '../errors.js';
import { paginate, readIntParam } from '../pagination.js';
import { readBodyObject, readInstantParam, readStringParam } from '../query.js';
import { orderDetail, orderRecord, trackingRecord } from '../records.js';
import { type RouteDeps, serveWithFaults } from '../route.js';
import { ORDER_STATUSES, type OrderStatus } from '../types.js';

const QUOTE_ID = /^[A-Za-z0-9]{8,9}$/;
/** fxRate per the reference: decimal text of 6 to 7 characters, e.g. "5.4321". */
const FX_RATE = /^(?=.{6,7}$)\d+\.\d+$/;

export function registerOrderRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { simulator } = deps;

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
      return orderRecord(simulator.createOrder(quoteId, fxRate));
    }),
  );

  app.get(
    '/client/orders',
    { config: { access: 'read' } },
    serveWithFaults(deps, 'listOrders', (request) => {
      const query = request.query as Record<string, unknown>;
      const limit = readIntParam(query, 'limit', { default: 20, min: 1, max: 100 });
      const page = readIntParam(query, 'offset', { default: 1, min: 1, max: 1_000_000 });
      const orders = simulator.ledger.list({
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
    serveWithFaults(deps, 'getOrder', (request) => orderDetail(simulator.getOrder(orderId(request)))),
  );

  app.get(
    '/client/orders/:id/tracking',
    { config: { access: 'read' } },
    serveWithFaults(deps, 'tracking', (request) => trackingRecord(simulator.getOrder(orderId(request)))),
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
