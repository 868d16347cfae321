/**
 * From settings to a purchase-service client: shared by the worker (src/app.ts) and the operator commands
 * (src/cli/api-session.ts), so that both talk to the service with the same limits.
 */
import {
  createPurchaseClient,
  type PurchaseClient,
  type RequestEvent,
  type ServiceGate,
} from '../api/index.js';
import type { Settings } from './schema.js';

export class MissingTokenError extends Error {
  override readonly name = 'MissingTokenError';
  readonly code = 'API_TOKEN_MISSING';
  constructor() {
    super('TREASURY_API_URL is set but no token: set TREASURY_API_TOKEN or TREASURY_API_TOKEN_FILE');
  }
}

/** The configured token, or MissingTokenError: a configured service is never called without one. */
export function requireToken(settings: Pick<Settings, 'api'>): string {
  if (settings.api.token === undefined) throw new MissingTokenError();
  return settings.api.token;
}

/** Where one pool of the worker departs from the configured transport. */
export interface ClientVariant {
  connections?: number;
  maxAttempts?: number;
}

export function createClientFromSettings(
  settings: Settings,
  service: { baseUrl: string; token: string; gate?: ServiceGate },
  onRequest?: (event: RequestEvent) => void,
  variant: ClientVariant = {},
): PurchaseClient {
  const { api } = settings;
  return createPurchaseClient({
    ...service,
    format: api.format,
    timeouts: api.timeouts,
    connections: variant.connections ?? api.connections,
    keepAliveMs: api.keepAliveMs,
    retry: {
      ...api.retry,
      ...(variant.maxAttempts === undefined ? {} : { maxAttempts: variant.maxAttempts }),
    },
    onRequest,
  });
}
