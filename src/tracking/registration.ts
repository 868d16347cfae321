/**
 * Registers the receiver with the service, for each account with a secret at that account's service:
 * POST /client/webhook/config once per event kind (each call sets the url and switches one kind), then
 * GET /client/webhook/config to verify. The registered url carries the secret, so it is never logged or
 * put in a message: only its origin is.
 */
import {
  type PurchaseClient,
  WEBHOOK_EVENT_KINDS,
  type WebhookConfig,
  type WebhookEventKind,
} from '../api/index.js';
import type { Settings } from '../config/index.js';
import type { Logger } from '../observability/logger.js';
import { DEFAULT_ACCOUNT } from '../strategy/index.js';
import { webhookUrl } from './webhook-receiver.js';

/**
 * The kinds the tracker wants: every kind but `quote`, for each of them names an order and hints at a
 * settlement step.
 */
export const WANTED_EVENT_KINDS: readonly WebhookEventKind[] = WEBHOOK_EVENT_KINDS.filter(
  (kind) => kind !== 'quote',
);

export interface RegistrationResult {
  account: string;
  /** false: nothing to do (no public url, or no secret for the account). */
  attempted: boolean;
  /** The service's configuration matches what we asked for. */
  verified: boolean;
  problems: string[];
}

/** An account as registration sees it: its client and its secret (none: its receiver path is off). */
export interface RegisteringAccount {
  name: string;
  client: Pick<PurchaseClient, 'setWebhookConfig' | 'getWebhookConfig'>;
  webhookSecret?: string;
}

/**
 * Registers each account's own path (webhookUrl) with that account's client, one account after the other;
 * one account's failure is its own result and does not stop the others'.
 */
export async function registerWebhooks(
  accounts: readonly RegisteringAccount[],
  settings: Pick<Settings, 'webhook'>,
  logger: Logger,
): Promise<RegistrationResult[]> {
  const results: RegistrationResult[] = [];
  for (const account of accounts)
    results.push(
      await registerAccount(account, settings.webhook.publicUrl, logger.child({ account: account.name })),
    );
  return results;
}

async function registerAccount(
  account: RegisteringAccount,
  publicUrl: string | undefined,
  logger: Logger,
): Promise<RegistrationResult> {
  const { client, webhookSecret: secret } = account;
  if (publicUrl === undefined || secret === undefined) {
    if (publicUrl !== undefined)
      logger.warn('webhook public url set but the account has no webhook secret: not registering it');
    return { account: account.name, attempted: false, verified: false, problems: [] };
  }
  const url = webhookUrl(publicUrl, secret, account.name);
  const origin = new URL(publicUrl).origin;
  const result = (verified: boolean, problems: string[]) => ({
    account: account.name,
    attempted: true,
    verified,
    problems,
  });
  try {
    for (const methodId of WANTED_EVENT_KINDS) await client.setWebhookConfig({ url, methodId, active: true });
    const problems = compareConfig(await client.getWebhookConfig(), url, account.name);
    if (problems.length > 0) {
      logger.error({ origin, problems }, 'webhook registration does not match the service configuration');
      return result(false, problems);
    }
    logger.info({ origin, kinds: WANTED_EVENT_KINDS }, 'webhooks registered and verified');
    return result(true, []);
  } catch (error) {
    // The error's message names the operation; its body could echo the url, so only code and status go out.
    const code = (error as { code?: unknown }).code;
    const status = (error as { status?: unknown }).status;
    const problem = `registration call failed (${String(code ?? 'error')}${status ? `, HTTP ${status}` : ''})`;
    logger.error({ origin, code, status }, `webhook registration failed: ${problem}`);
    return result(false, [problem]);
  }
}

function compareConfig(config: WebhookConfig, expectedUrl: string, account: string): string[] {
  const problems: string[] = [];
  if (config.url !== expectedUrl) {
    const path = account === DEFAULT_ACCOUNT ? '/webhooks/<secret>' : `/webhooks/${account}/<secret>`;
    problems.push(`the configured url is not this receiver (it differs from <publicUrl>${path})`);
  }
  for (const kind of WANTED_EVENT_KINDS) {
    const entry = config.events.find((event) => event.methodId === kind);
    if (entry?.active !== true) problems.push(`event kind ${kind} is not active`);
  }
  return problems;
}
