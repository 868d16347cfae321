/**
 * One pass of the delivery loop: claim the due messages (a lease, so one replica at a time per message, and
 * never a message while an older one of its subject waits on the same channel), send them, and write down
 * what became of each. Delivery is at least once: a replica that dies after sending and before writing
 * `sent` leaves the message to be sent again when its lease ends, under the same id, which receivers
 * dedupe on.
 */
import type { NotificationSettings } from '../config/index.js';
import type { Database, NotificationRecord } from '../db/index.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { backoffDelayMs } from '../runtime/backoff.js';
import type { Channel, DeliveryOutcome } from './channels.js';

export interface DeliveryDeps {
  database: Pick<Database, 'notifications'>;
  channels: ReadonlyMap<string, Channel>;
  settings: NotificationSettings['delivery'];
  metrics: Metrics;
  logger: Logger;
  clock: () => Date;
  /** Jitter source of the backoff. */
  random?: () => number;
}

/**
 * The lease outlives the slowest send (an SMTP connect, greeting and send may each take the timeout),
 * so a live replica never sees its message claimed by another mid-delivery.
 */
export function leaseMs(settings: NotificationSettings['delivery']): number {
  return settings.timeoutMs * 3 + 5_000;
}

/** Delay before attempt `attempts + 1`: the project's exponential backoff with jitter. */
export function retryDelayMs(
  settings: NotificationSettings['delivery'],
  attempts: number,
  random: () => number = Math.random,
): number {
  return backoffDelayMs(attempts, { baseMs: settings.baseDelayMs, maxMs: settings.maxDelayMs }, random);
}

/** Returns true when the batch was full: more messages may be due at once. */
export async function deliverDue(deps: DeliveryDeps): Promise<boolean> {
  const { database, channels, settings } = deps;
  const claimed = await database.notifications.claimDue(settings.batchSize, leaseMs(settings), [
    ...channels.keys(),
  ]);
  // A batch holds at most one message per subject and channel, so its messages may go out together.
  await Promise.all(claimed.map((message) => deliverOne(deps, message)));
  return claimed.length === settings.batchSize;
}

async function deliverOne(deps: DeliveryDeps, message: NotificationRecord): Promise<void> {
  const { database, settings, metrics, logger, clock } = deps;
  const channel = deps.channels.get(message.channel);
  if (!channel) return;
  const fields = { id: message.id, type: message.type, subject: message.subject, channel: channel.name };
  const expiresAt = message.createdAt.getTime() + settings.maxAgeMs;
  if (clock().getTime() >= expiresAt) {
    await giveUp(deps, message, 'expired', `not delivered within ${settings.maxAgeMs} ms`);
    return;
  }
  let outcome: DeliveryOutcome;
  try {
    outcome = await channel.send(message);
  } catch (error) {
    outcome = { result: 'retry', detail: error instanceof Error ? error.message : String(error) };
  }
  if (outcome.result === 'sent') {
    await database.notifications.markSent(message.id);
    metrics.notifications.inc({ channel: channel.name, result: 'sent' });
    logger.info({ ...fields, attempts: message.attempts }, 'notification sent');
    return;
  }
  if (outcome.result === 'rejected') {
    await giveUp(deps, message, 'rejected', outcome.detail);
    return;
  }
  const at = clock().getTime() + retryDelayMs(settings, message.attempts, deps.random);
  if (at >= expiresAt) {
    await giveUp(
      deps,
      message,
      'expired',
      `${outcome.detail}; no attempt left within ${settings.maxAgeMs} ms`,
    );
    return;
  }
  await database.notifications.retryLater(message.id, message.attempts, new Date(at), outcome.detail);
  metrics.notifications.inc({ channel: channel.name, result: 'retry' });
  logger.warn(
    { ...fields, attempts: message.attempts, error: outcome.detail, nextAttemptAt: new Date(at) },
    'notification not delivered; will retry',
  );
}

async function giveUp(
  { database, metrics, logger }: DeliveryDeps,
  message: NotificationRecord,
  result: 'rejected' | 'expired',
  detail: string,
): Promise<void> {
  await database.notifications.markDead(message.id, message.attempts, `${result}: ${detail}`);
  metrics.notifications.inc({ channel: message.channel, result });
  metrics.notificationsDead.inc({ channel: message.channel });
  logger.error(
    {
      id: message.id,
      type: message.type,
      subject: message.subject,
      channel: message.channel,
      attempts: message.attempts,
      error: detail,
      alert: 'notification_dead',
    },
    `notification given up (${result})`,
  );
}
