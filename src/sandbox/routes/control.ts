import type { FastifyInstance } from 'fastify';
import { ZodError } from 'zod';
import { badRequest } from '../errors.js';
import { viewOrder } from '../ledger.js';
import { orderDetail } from '../records.js';
import { type RouteDeps, serve } from '../route.js';

/** The control API: admin token only, never subject to injected faults. */
export function registerControlRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const admin = { config: { access: 'admin' } };

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
    serve((request) => orderDetail(deps.simulator.step((request.params as { id: string }).id))),
  );

  app.get(
    '/_sandbox/ledger',
    admin,
    serve(() => ({ orders: deps.simulator.ledger.all().map(viewOrder) })),
  );
}

function summarize(error: ZodError): string {
  return error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ');
}
