/**
 * From an account's settings to a purchase-service client: shared by the worker (src/app.ts) and the
 * operator commands (src/cli/), so that both talk to each account's service with the same limits.
 */
import {
  createPurchaseClient,
  type PurchaseClient,
  type RequestEvent,
  type ServiceGate,
} from '../api/index.js';
import { DEFAULT_ACCOUNT } from '../strategy/index.js';
import type { AccountSettings } from './schema.js';

export class MissingTokenError extends Error {
  override readonly name = 'MissingTokenError';
  readonly code = 'API_TOKEN_MISSING';
  constructor(account: string) {
    super(
      account === DEFAULT_ACCOUNT
        ? 'TREASURY_API_URL is set but no token: set TREASURY_API_TOKEN or TREASURY_API_TOKEN_FILE'
        : `account ${account} names a service (api.url) but no token: set its api.tokenFile`,
    );
  }
}

/** The account's token, or MissingTokenError: a configured service is never called without one. */
export function requireToken(account: Pick<AccountSettings, 'name' | 'api'>): string {
  if (account.api.token === undefined) throw new MissingTokenError(account.name);
  return account.api.token;
}

/** Where one pool of the worker departs from the configured transport. */
export interface ClientVariant {
  connections?: number;
  maxAttempts?: number;
}

/**
 * A client of one account: its address and token only ever go together, so a token never reaches another
 * account's service.
 */
export function createAccountClient(
  account: AccountSettings,
  service: { baseUrl: string; token: string; gate?: ServiceGate },
  onRequest?: (event: RequestEvent) => void,
  variant: ClientVariant = {},
): PurchaseClient {
  const { api } = account;
  return createPurchaseClient({
    ...service,
    account: account.name,
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
