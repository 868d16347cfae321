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
  host?: string;
  port: number;
  metrics: Metrics;
  readiness: () => Promise<ReadinessReport>;
  logger: Logger;
  /** Largest request body accepted by any route (the webhook receiver narrows it further). */
  bodyLimitBytes?: number;
}

/**
 * The worker's one HTTP listener: `/metrics`, `/healthz`, `/readyz`, and whatever routes are registered before
 * `listen` (the webhook receiver). Fastify's own request logging is off: request URLs can carry the webhook
 * secret, and the receiver logs what matters itself.
 */
export function createHttpServer(options: HttpServerOptions): FastifyInstance {
  const app = Fastify({ logger: false, bodyLimit: options.bodyLimitBytes ?? 1024 * 1024 });

  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (_request, reply) => {
    let report: ReadinessReport;
    try {
      report = await options.readiness();
    } catch (error) {
      options.logger.warn({ err: error }, 'readiness check failed');
      report = { ready: false, paused: false, checks: { readiness: { ok: false, detail: 'check failed' } } };
    }
    return reply.code(report.ready ? 200 : 503).send(report);
  });

  app.get('/metrics', async (_request, reply) => {
    const body = await options.metrics.registry.metrics();
    return reply.type(options.metrics.registry.contentType).send(body);
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
