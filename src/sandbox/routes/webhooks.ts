import type { FastifyInstance } from 'fastify';
import { badRequest } from '../errors.js';
import { readIntParam } from '../pagination.js';
import { readBodyObject } from '../query.js';
import { type RouteDeps, serveWithFaults } from '../route.js';

export function registerWebhookRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const hub = deps.simulator.webhooks;

  app.post(
    '/client/webhook/config',
    { config: { access: 'write' } },
    serveWithFaults(deps, 'setWebhookConfig', (request) => {
      const body = readBodyObject(request.body);
      const url = readWebhookUrl(body.url);
      const webhook = readBodyObject(body.webhook);
      if (typeof webhook.methodId !== 'string') throw badRequest('webhook.methodId must be a string');
      if (typeof webhook.active !== 'boolean') throw badRequest('webhook.active must be a boolean');
      return hub.configure(url, webhook.methodId, webhook.active);
    }),
  );

  app.get(
    '/client/webhook/config',
    { config: { access: 'read' } },
    serveWithFaults(deps, 'getWebhookConfig', () => hub.config()),
  );

  // The reference gives this endpoint strict bounds (page >= 1, limit 1..100): outside them is a 400.
  app.get(
    '/client/webhook/:id/logs',
    { config: { access: 'read' } },
    serveWithFaults(deps, 'webhookLogsById', (request) => {
      const query = request.query as Record<string, unknown>;
      const page = readIntParam(query, 'page', { default: 1, min: 1, max: 1_000_000 });
      const limit = readIntParam(query, 'limit', { default: 20, min: 1, max: 100 });
      return hub.logsPage({ page, limit }, (request.params as { id: string }).id);
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
      return hub.logsPage({ page, limit });
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
