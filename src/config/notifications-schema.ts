/**
 * Settings of the notifications (`notifications:` in the settings file): the channels messages go to, which
 * events go where, the daily digest and the delivery loop's pace. Channel secrets (a Slack webhook URL, a
 * webhook signing secret, an SMTP URL with its password) arrive resolved: `{ file: PATH }` and
 * `{ env: NAME }` are read by the loader (channel-secrets.ts) before validation.
 */
import { z } from 'zod';
import { NOTIFICATION_TYPES } from '../notify/event-types.js';
import { isKnownTimeZone } from '../strategy/wall-clock.js';

const httpUrl = z.url({ protocol: /^https?$/, error: 'expected an http(s) URL' });
const positiveMs = z.number().int().positive();
const channelName = z.string().regex(/^[a-z0-9][a-z0-9_-]*$/, {
  error: 'expected a channel name of lower-case letters, digits, - and _',
});

/** Standard Webhooks: `whsec_` then the base64 of the key (at least 16 bytes). */
export const WEBHOOK_SECRET_PATTERN = /^whsec_[A-Za-z0-9+/]{22,}={0,2}$/;

const slackChannel = z.strictObject({
  type: z.literal('slack'),
  /** Slack's incoming-webhook URL: whoever has it can post, so it is a secret. */
  webhookUrl: httpUrl,
});

const webhookChannel = z.strictObject({
  type: z.literal('webhook'),
  url: httpUrl,
  secret: z.string().regex(WEBHOOK_SECRET_PATTERN, {
    error: 'expected whsec_ followed by the base64 of at least 16 bytes',
  }),
});

const emailChannel = z.strictObject({
  type: z.literal('email'),
  /** `smtp://user:password@host:587` or `smtps://…`: a secret, as it may carry the password. */
  smtp: z.string().regex(/^smtps?:\/\/[^/\s]+/, { error: 'expected an smtp:// or smtps:// URL' }),
  from: z.string().min(3),
  to: z.array(z.email({ error: 'expected an email address' })).min(1),
});

export const channelSchema = z.discriminatedUnion('type', [slackChannel, webhookChannel, emailChannel], {
  error: 'expected type slack, webhook or email',
});

const routedType = z.enum([...NOTIFICATION_TYPES.filter((type) => type !== 'test'), '*'], {
  error: `expected '*' or one of ${NOTIFICATION_TYPES.filter((type) => type !== 'test').join(', ')}`,
});

const deliverySchema = z.strictObject({
  /** How often the outbox is looked at when the last look found nothing due. */
  intervalMs: positiveMs.default(1_000),
  /** Wait for a receiver's answer (HTTP and SMTP). */
  timeoutMs: positiveMs.default(10_000),
  /** First retry delay; it doubles per attempt, with jitter, up to maxDelayMs. */
  baseDelayMs: positiveMs.default(5_000),
  maxDelayMs: positiveMs.default(600_000),
  /** A message not delivered this long after it was written is given up (`dead`) and counted. */
  maxAgeMs: positiveMs.default(86_400_000),
  /** Messages claimed per look. */
  batchSize: z.number().int().min(1).max(500).default(20),
});

export const notificationsSchema = z
  .strictObject({
    channels: z.record(channelName, channelSchema).optional(),
    routes: z
      .array(
        z.strictObject({
          events: z.array(routedType).min(1),
          channels: z.array(channelName).min(1),
        }),
      )
      .optional(),
    digest: z
      .strictObject({
        /** Local time of the daily digest, `HH:MM`. */
        at: z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, { error: 'expected HH:MM, such as 18:00' }),
        timezone: z
          .string()
          .refine(isKnownTimeZone, { error: 'unknown time zone (expected an IANA name)' })
          .default('UTC'),
        channels: z.array(channelName).min(1),
      })
      .optional(),
    /** Public address of the console: Slack messages link to the page of what they report. */
    consoleUrl: httpUrl.optional(),
    delivery: deliverySchema.prefault({}),
  })
  .superRefine((section, context) => {
    const known = new Set(Object.keys(section.channels ?? {}));
    const check = (names: readonly string[], path: (string | number)[]) => {
      for (const [index, name] of names.entries()) {
        if (!known.has(name))
          context.addIssue({
            code: 'custom',
            path: [...path, index],
            message: `no such channel under notifications.channels`,
          });
      }
    };
    for (const [index, route] of (section.routes ?? []).entries())
      check(route.channels, ['routes', index, 'channels']);
    if (section.digest) check(section.digest.channels, ['digest', 'channels']);
  });

export type NotificationSettings = z.output<typeof notificationsSchema>;
export type ChannelSettings = z.output<typeof channelSchema>;

/** The channel fields that hold secrets: given inline, as `{ file: PATH }` or as `{ env: NAME }`. */
export const CHANNEL_SECRET_FIELDS: Readonly<Record<ChannelSettings['type'], string>> = {
  slack: 'webhookUrl',
  webhook: 'secret',
  email: 'smtp',
};

/** True for `notifications.channels.<name>.<secret field>`: such values are never echoed in errors. */
export function isChannelSecretKey(path: readonly string[]): boolean {
  return (
    path.length === 4 &&
    path[0] === 'notifications' &&
    path[1] === 'channels' &&
    Object.values(CHANNEL_SECRET_FIELDS).includes(path[3]!)
  );
}

/** Every channel secret, for the logger's scrubbing. */
export function channelSecrets(settings: NotificationSettings): string[] {
  return Object.values(settings.channels ?? {}).flatMap((channel) => {
    if (channel.type === 'slack') return [channel.webhookUrl];
    if (channel.type === 'webhook') return [channel.secret, channel.secret.slice('whsec_'.length)];
    const password = passwordOf(channel.smtp);
    return [channel.smtp, ...(password ? [password, decodeURIComponent(password)] : [])];
  });
}

function passwordOf(url: string): string | undefined {
  try {
    return new URL(url).password || undefined;
  } catch {
    return undefined;
  }
}
