import type { FastifyInstance } from 'fastify';
import { balanceRecord } from '../balance.js';
import { type RouteDeps, serveWithFaults } from '../route.js';

export function registerBalanceRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.get(
    '/client/balance',
    { config: { access: 'read' } },
    serveWithFaults(deps, 'balance', () =>
      balanceRecord(deps.simulator.ledger.all(), deps.simulator.creditLimit),
    ),
  );
}
