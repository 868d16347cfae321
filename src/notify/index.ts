/**
 * Notifications as the composition root (src/app.ts) uses them: the router the outbox writes with, and the
 * notifier of `run`, which owns the channels, the delivery loop and the daily digest. Start it after the
 * database; stop it before closing the database.
 */
import { randomUUID } from 'node:crypto';
import type { NotificationSettings } from '../config/index.js';
import type { Database, NotificationRouter } from '../db/index.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { createPeriodicTask } from '../runtime/periodic-task.js';
import { type Channel, createChannel, type DeliveryOutcome } from './channels.js';
import { deliverDue } from './delivery.js';
import { enqueueDueDigest } from './digest.js';
import { NOTIFICATION_TYPES } from './event-types.js';

export { type Channel, createChannel, type DeliveryOutcome, signatureHeaders } from './channels.js';
export { deliverDue, leaseMs, retryDelayMs } from './delivery.js';
export { DIGEST_GRACE_MS, dueDigestSlot, enqueueDueDigest } from './digest.js';
export {
  NOTIFICATION_TYPES,
  type NotificationData,
  type NotificationEvent,
  type NotificationType,
} from './event-types.js';

/** How often every replica looks whether the digest is due (it is written once, whoever looks first). */
const DIGEST_CHECK_MS = 15_000;

/**
 * The channels each type goes to: the routes naming it or `*`; the digest goes to the digest's channels
 * only, and `test` nowhere (the command sends it directly).
 */
export function routerFor(settings: NotificationSettings): NotificationRouter {
  const table = new Map<string, readonly string[]>();
  for (const type of NOTIFICATION_TYPES) {
    if (type === 'test') continue;
    if (type === 'daily_digest') {
      table.set(type, settings.digest?.channels ?? []);
      continue;
    }
    const channels = new Set<string>();
    for (const route of settings.routes ?? []) {
      if (route.events.includes(type) || route.events.includes('*'))
        for (const channel of route.channels) channels.add(channel);
    }
    table.set(type, [...channels]);
  }
  return (type) => table.get(type) ?? [];
}

export function createChannels(settings: NotificationSettings, clock?: () => Date): Map<string, Channel> {
  return new Map(
    Object.entries(settings.channels ?? {}).map(([name, channel]) => [
      name,
      createChannel(name, channel, {
        timeoutMs: settings.delivery.timeoutMs,
        consoleUrl: settings.consoleUrl,
        clock,
      }),
    ]),
  );
}

export interface NotifierDeps {
  database: Pick<Database, 'notifications'>;
  settings: NotificationSettings;
  metrics: Metrics;
  logger: Logger;
  clock: () => Date;
}

export interface Notifier {
  start(): void;
  /** Waits for the pass in flight, then closes the channels. Safe to call more than once. */
  stop(): Promise<void>;
  /** One delivery pass now (after the one in flight). */
  deliverNow(): Promise<void>;
}

export function createNotifier({ database, settings, metrics, logger, clock }: NotifierDeps): Notifier {
  const channels = createChannels(settings, clock);
  // Every series of a configured channel exists from the start, so that rate() sees its first increment.
  for (const channel of channels.keys()) {
    for (const result of ['sent', 'retry', 'rejected', 'expired'] as const)
      metrics.notifications.inc({ channel, result }, 0);
    metrics.notificationsDead.inc({ channel }, 0);
  }
  const delivery = createPeriodicTask({
    name: 'notification delivery',
    intervalMs: settings.delivery.intervalMs,
    run: () => deliverDue({ database, channels, settings: settings.delivery, metrics, logger, clock }),
    again: (full) => full,
    logger,
  });
  const { digest } = settings;
  const digests = digest
    ? createPeriodicTask({
        name: 'daily digest',
        intervalMs: DIGEST_CHECK_MS,
        run: async () => {
          if (await enqueueDueDigest(database, digest, clock())) logger.info('daily digest written');
        },
        logger,
      })
    : undefined;
  let stopping: Promise<void> | undefined;
  return {
    start() {
      if (channels.size === 0) return;
      delivery.start();
      digests?.start();
    },
    stop() {
      stopping ??= (async () => {
        await digests?.stop();
        await delivery.stop();
        await Promise.all([...channels.values()].map((channel) => channel.close()));
      })();
      return stopping;
    },
    deliverNow: async () => {
      await delivery.runNow();
    },
  };
}

/** `notify test CHANNEL`: one message straight to the channel, bypassing the outbox. */
export async function sendTestMessage(
  settings: NotificationSettings,
  name: string,
  clock: () => Date = () => new Date(),
): Promise<DeliveryOutcome & { id: string; channel: string }> {
  const configured = settings.channels?.[name];
  if (!configured) {
    const known = Object.keys(settings.channels ?? {});
    throw new UnknownChannelError(name, known);
  }
  const channel = createChannel(name, configured, {
    timeoutMs: settings.delivery.timeoutMs,
    consoleUrl: settings.consoleUrl,
    clock,
  });
  const id = `msg_test_${randomUUID()}`;
  try {
    const outcome = await channel.send({
      id,
      type: 'test',
      subject: 'test',
      occurredAt: clock(),
      data: { channel: name, note: 'If you read this, the channel works.' },
    });
    return { ...outcome, id, channel: name };
  } finally {
    await channel.close();
  }
}

export class UnknownChannelError extends Error {
  override readonly name = 'UnknownChannelError';
  readonly code = 'CHANNEL_UNKNOWN';
  constructor(channel: string, known: readonly string[]) {
    super(
      `no notification channel named ${JSON.stringify(channel)}${
        known.length > 0 ? ` (configured: ${known.join(', ')})` : ' (notifications.channels is empty)'
      }`,
    );
  }
}
