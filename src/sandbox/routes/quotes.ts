import type { FastifyInstance } from 'fastify';
import { Decimal } from '../../money.js';
import { badRequest } from '../errors.js';
import { SYMBOL } from '../market.js';
import { requireStringParam } from '../query.js';
import { type RouteDeps, serveWithFaults } from '../route.js';

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
      const quote = deps.simulator.issueQuote(symbol, amount);
      return deps.simulator.quotes.toRecord(quote);
    }),
  );
}
