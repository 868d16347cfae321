/**
 * Registers the receiver with the service: POST /client/webhook/config once per event kind (each call sets
 * the url and switches one kind), then GET /client/webhook/config to verify. The registered url carries
 * the secret, so it is never logged or put in a message: only its origin is.
 */
import {
  type PurchaseClient,
  WEBHOOK_EVENT_KINDS,
  type WebhookConfig,
  type WebhookEventKind,
} from '../api/index.js';
import type { Settings } from '../config/index.js';
import type { Logger } from '../observability/logger.js';
import { webhookUrl } from './webhook-receiver.js';

/**
 * The kinds the tracker wants: every kind but `quote`, for each of them names an order and hints at a
 * settlement step.
 */
export const WANTED_EVENT_KINDS: readonly WebhookEventKind[] = WEBHOOK_EVENT_KINDS.filter(
  (kind) => kind !== 'quote',
);

export interface RegistrationResult {
  /** false: nothing to do (no public url or no secret). */
  attempted: boolean;
  /** The service's configuration matches what we asked for. */
  verified: boolean;
  problems: string[];
}

export async function registerWebhooks(
  client: Pick<PurchaseClient, 'setWebhookConfig' | 'getWebhookConfig'>,
  settings: Pick<Settings, 'webhook'>,
  logger: Logger,
): Promise<RegistrationResult> {
  const { publicUrl, secret } = settings.webhook;
  if (publicUrl === undefined || secret === undefined) {
    if (publicUrl !== undefined) logger.warn('webhook public url set without a secret: not registering');
    return { attempted: false, verified: false, problems: [] };
  }
  const url = webhookUrl(publicUrl, secret);
  const origin = new URL(publicUrl).origin;
  try {
    for (const methodId of WANTED_EVENT_KINDS) await client.setWebhookConfig({ url, methodId, active: true });
    const problems = compareConfig(await client.getWebhookConfig(), url);
    if (problems.length > 0) {
      logger.error({ origin, problems }, 'webhook registration does not match the service configuration');
      return { attempted: true, verified: false, problems };
    }
    logger.info({ origin, kinds: WANTED_EVENT_KINDS }, 'webhooks registered and verified');
    return { attempted: true, verified: true, problems: [] };
  } catch (error) {
    // The error's message names the operation; its body could echo the url, so only code and status go out.
    const code = (error as { code?: unknown }).code;
    const status = (error as { status?: unknown }).status;
    const problem = `registration call failed (${String(code ?? 'error')}${status ? `, HTTP ${status}` : ''})`;
    logger.error({ origin, code, status }, `webhook registration failed: ${problem}`);
    return { attempted: true, verified: false, problems: [problem] };
  }
}

function compareConfig(config: WebhookConfig, expectedUrl: string): string[] {
  const problems: string[] = [];
  if (config.url !== expectedUrl) {
    problems.push('the configured url is not this receiver (it differs from <publicUrl>/webhooks/<secret>)');
  }
  for (const kind of WANTED_EVENT_KINDS) {
    const entry = config.events.find((event) => event.methodId === kind);
    if (entry?.active !== true) problems.push(`event kind ${kind} is not active`);
  }
  return problems;
}
