/**
 * The daily digest: at `notifications.digest.at` in its time zone, the orders since the previous digest per
 * strategy (count, spend, average price) and what is open now. The instant is the schedule's slot, by the
 * same slot calculator as the strategies' (strategy/slots.ts), so the DST rules are theirs: a time in a
 * skipped hour is sent at the first instant after the gap, a repeated one once. Every replica looks; the
 * digest of a local date has one key, so it is written once.
 */
import type { NotificationSettings } from '../config/index.js';
import type { Database } from '../db/index.js';
import { toDecimalText, ZERO } from '../money.js';
import { latestSlotAtOrBefore } from '../strategy/index.js';
import type { NotificationEvent } from './event-types.js';

/** A digest whose time passed while no worker ran is still sent this long after it; later, skipped. */
export const DIGEST_GRACE_MS = 3_600_000;

export type DigestSettings = NonNullable<NotificationSettings['digest']>;

/** `MM HH * * *` from `HH:MM`. */
function scheduleOf(digest: DigestSettings): string {
  const [hours, minutes] = digest.at.split(':');
  return `${Number(minutes)} ${Number(hours)} * * *`;
}

/** The digest slot due at `now`, if its time came within the grace. */
export function dueDigestSlot(digest: DigestSettings, now: Date): Date | undefined {
  const slot = latestSlotAtOrBefore(scheduleOf(digest), digest.timezone, now);
  if (slot === undefined || now.getTime() - slot.getTime() > DIGEST_GRACE_MS) return undefined;
  return slot;
}

/** Writes the due digest, once per local date; returns whether this call wrote it. */
export async function enqueueDueDigest(
  database: Pick<Database, 'notifications'>,
  digest: DigestSettings,
  now: Date,
): Promise<boolean> {
  const slot = dueDigestSlot(digest, now);
  if (slot === undefined) return false;
  const from =
    latestSlotAtOrBefore(scheduleOf(digest), digest.timezone, new Date(slot.getTime() - 1)) ??
    new Date(slot.getTime() - 86_400_000);
  const figures = await database.notifications.digestFigures(from, slot);
  const date = localDate(slot, digest.timezone);
  const spent = figures.strategies.reduce((sum, row) => sum.plus(row.spent), ZERO);
  const event: NotificationEvent = {
    type: 'daily_digest',
    subject: 'daily_digest',
    occurredAt: slot,
    key: `daily_digest_${date}`,
    data: {
      date,
      timezone: digest.timezone,
      from: from.toISOString(),
      to: slot.toISOString(),
      orders: figures.strategies.reduce((sum, row) => sum + row.orders, 0),
      spent: toDecimalText(spent),
      strategies: figures.strategies.map((row) => ({
        strategy: row.strategy,
        orders: row.orders,
        spent: toDecimalText(row.spent),
        averagePrice: row.averagePrice === null ? null : toDecimalText(row.averagePrice),
      })),
      openOrders: figures.openOrders,
      unsureCycles: figures.unsureCycles,
      haltedStrategies: figures.haltedStrategies,
    },
  };
  return (await database.notifications.enqueueNow([event])) > 0;
}

/** `YYYY-MM-DD` of the instant in the zone. */
function localDate(instant: Date, timeZone: string): string {
  return new Intl.DateTimeFormat('en-CA', {
    timeZone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  }).format(instant);
}
