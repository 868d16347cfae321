import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Builds the receiver's secret check. Both sides are hashed first so that the comparison always runs over
 * 32 bytes: timingSafeEqual needs equal lengths, and comparing lengths first would leak the secret's length.
 */
export function createSecretCheck(secret: string): (candidate: string) => boolean {
  const expected = digest(secret);
  return (candidate) => timingSafeEqual(digest(candidate), expected);
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** The receiver's path as it may appear in logs and metrics. */
export const REDACTED_WEBHOOK_ROUTE = '/webhooks/:secret';

/** The path the service is told to deliver to; never logged. */
export function webhookUrl(publicUrl: string, secret: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/webhooks/${encodeURIComponent(secret)}`;
}
