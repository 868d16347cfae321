import Fastify, { type FastifyInstance } from 'fastify';
import type { Logger } from './logger.js';
import type { Metrics } from './metrics.js';

export interface ReadinessCheck {
  ok: boolean;
  detail?: string;
}

export interface ReadinessReport {
  ready: boolean;
  paused: boolean;
  checks: Record<string, ReadinessCheck>;
}

export interface HttpServerOptions {
  metrics: Metrics;
  /** The state the worker's periodic checks left; answering never calls the service or the database. */
  readiness: () => ReadinessReport;
  logger: Logger;
  /** Largest request body accepted by any route (the webhook receiver narrows it further). */
  bodyLimitBytes?: number;
  /** Addresses of the proxies whose X-Forwarded-For names the client (ops.trustedProxies). */
  trustedProxies?: readonly string[];
}

/**
 * The operations listener: `/metrics`, `/healthz`, `/readyz`, and whatever routes are registered before
 * `listen` (the web console; the webhook receiver only on the deprecated single listener). Fastify's own
 * request logging is off: request URLs can carry the webhook secret, and the receiver logs what matters itself.
 */
export function createHttpServer(options: HttpServerOptions): FastifyInstance {
  const app = createReceiverServer(options.bodyLimitBytes, options.trustedProxies);

  // Public by design (README, "Security"): probes and scrapers carry no login, the listener's address
  // decides who reaches them, and none of them acts.
  const open = { config: { requires: 'public' as const } };
  app.get('/healthz', open, async () => ({ status: 'ok' }));

  app.get('/readyz', open, async (_request, reply) => {
    const report = options.readiness();
    return reply.code(report.ready ? 200 : 503).send(report);
  });

  app.get('/metrics', open, async (_request, reply) => {
    const body = await options.metrics.registry.metrics();
    return reply.type(options.metrics.registry.contentType).send(body);
  });

  return app;
}

/** A route as registered: its method and path pattern, and what it requires (src/console/permissions.ts `Access`). */
export interface ListedRoute {
  method: string;
  url: string;
  requires: unknown;
}

const LISTED = new WeakMap<FastifyInstance, ListedRoute[]>();

/**
 * Every route registered on a listener made here, in every plugin scope: what the route walk of the tests
 * (and a reader) sees, from fastify itself rather than a list kept by hand.
 */
export function listedRoutes(app: FastifyInstance): readonly ListedRoute[] {
  return LISTED.get(app) ?? [];
}

/** A bare listener for the webhook receiver's route alone; any other path is a 404. */
export function createReceiverServer(
  bodyLimitBytes = 1024 * 1024,
  trustedProxies: readonly string[] = [],
): FastifyInstance {
  const app = Fastify({
    logger: false,
    bodyLimit: bodyLimitBytes,
    // request.ip is the client's only when the peer is a proxy the operator named (ops.trustedProxies).
    ...(trustedProxies.length > 0 ? { trustProxy: [...trustedProxies] } : {}),
  });
  const routes: ListedRoute[] = [];
  LISTED.set(app, routes);
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat())
      routes.push({
        method,
        url: route.url ?? route.path,
        requires: (route.config as { requires?: unknown })?.requires,
      });
  });
  return app;
}

/** Starts listening and returns the bound port (the configured one, or the ephemeral one for port 0). */
export async function listen(app: FastifyInstance, host: string, port: number): Promise<number> {
  await app.listen({ host, port });
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('HTTP server has no TCP address');
  return address.port;
}
