import { pack, unpack } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { trackingSettingsSchema } from '../../src/config/index.js';
import { failureDelayMs, nextCheckDelayMs } from '../../src/tracking/order-check.js';
import {
  createSecretCheck,
  readWebhookPath,
  webhookDedupeKey,
  webhookUrl,
} from '../../src/tracking/webhook-receiver.js';

const backoff = { minDelayMs: 1_000, maxDelayMs: 60_000, ageFactor: 0.5 };

describe('when to check an order again', () => {
  it('grows with the time since the last progress, within bounds', () => {
    const exact = () => 0.5;
    expect(nextCheckDelayMs(backoff, 0, exact)).toBe(1_000);
    expect(nextCheckDelayMs(backoff, 10_000, exact)).toBe(5_000);
    expect(nextCheckDelayMs(backoff, 10_000_000, exact)).toBe(60_000);
    expect(nextCheckDelayMs(backoff, -5_000, exact)).toBe(1_000);
  });

  it('jitters by at most 10 % and never leaves the bounds', () => {
    expect(nextCheckDelayMs(backoff, 10_000, () => 0)).toBe(4_500);
    expect(nextCheckDelayMs(backoff, 10_000, () => 0.999_999)).toBe(5_500);
    expect(nextCheckDelayMs(backoff, 0, () => 0)).toBe(1_000);
    expect(nextCheckDelayMs(backoff, 1e9, () => 0.999_999)).toBe(60_000);
  });

  it('backs off per consecutive failure (from twice the shortest delay), but never below the normal delay', () => {
    const most = () => 1;
    expect([1, 2, 3, 10, 1_000].map((n) => failureDelayMs(backoff, 0, n, most))).toEqual([
      2_000, 4_000, 8_000, 60_000, 60_000,
    ]);
    // The shared backoff's jitter keeps half the window: a first failure waits at least the shortest delay.
    expect(failureDelayMs(backoff, 0, 1, () => 0)).toBe(1_000);
    expect(failureDelayMs(backoff, 100_000, 1, () => 0.5)).toBe(50_000);
  });
});

describe('webhook secret', () => {
  it('accepts exactly the secret', () => {
    const isSecret = createSecretCheck('s3cret-value-0123456789');
    expect(isSecret('s3cret-value-0123456789')).toBe(true);
    for (const wrong of [
      '',
      's3cret-value-012345678',
      's3cret-value-0123456789 ',
      'S3CRET-VALUE-0123456789',
    ]) {
      expect(isSecret(wrong)).toBe(false);
    }
  });

  it('builds the registered url from the public url, with the secret as one path segment', () => {
    expect(webhookUrl('https://t.example/base/', 'abc/def?x', 'default')).toBe(
      'https://t.example/base/webhooks/abc%2Fdef%3Fx',
    );
    expect(webhookUrl('https://t.example', 'abcdefghijklmnop', 'default')).toBe(
      'https://t.example/webhooks/abcdefghijklmnop',
    );
    expect(webhookUrl('https://t.example/base', 'abc/def?x', 'north')).toBe(
      'https://t.example/base/webhooks/north/abc%2Fdef%3Fx',
    );
  });

  it('reads the account and the secret back from the raw path, and nothing from another shape', () => {
    for (const account of ['default', 'north']) {
      const { pathname, search } = new URL(webhookUrl('https://t.example', 'abc/def?x', account));
      expect(readWebhookPath(`${pathname}${search}`)).toEqual({ account, secret: 'abc/def?x' });
      expect(readWebhookPath(`${pathname}?retry=1`)).toEqual({ account, secret: 'abc/def?x' });
    }
    // The secret's encoded slash is no separator; a literal one is.
    expect(readWebhookPath('/webhooks/abc/def')).toEqual({ account: 'abc', secret: 'def' });
    for (const other of [
      '/webhooks/',
      '/webhooks//abc',
      '/webhooks/north/',
      '/webhooks/a/b/c',
      // `default` has the one-segment path only.
      '/webhooks/default/abcdefghijklmnop',
      '/webhooks/%E0%A4%A',
      '/webhook/abcdefghijklmnop',
    ])
      expect(readWebhookPath(other), other).toBeNull();
  });
});

describe('webhook dedupe key', () => {
  const data = { orderId: 'o-1', amount: 500.5, currency: 'BRL', receivedAt: '2026-03-02T12:00:00.000Z' };

  it('is the same for the same event in any key order and after a msgpack round trip', () => {
    const key = webhookDedupeKey('deposit_fiat', data);
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    const reordered = { receivedAt: data.receivedAt, currency: 'BRL', amount: 500.5, orderId: 'o-1' };
    expect(webhookDedupeKey('deposit_fiat', reordered)).toBe(key);
    expect(webhookDedupeKey('deposit_fiat', unpack(pack(data)))).toBe(key);
  });

  it('differs when the kind or any value differs', () => {
    const key = webhookDedupeKey('deposit_fiat', data);
    expect(webhookDedupeKey('deposit_crypto', data)).not.toBe(key);
    expect(webhookDedupeKey('deposit_fiat', { ...data, amount: 500.51 })).not.toBe(key);
    expect(webhookDedupeKey('deposit_fiat', { ...data, extra: null })).not.toBe(key);
  });
});

describe('tracking settings', () => {
  it('has a default for everything and refuses nonsense with the field named', () => {
    const defaults = trackingSettingsSchema.parse({});
    expect(defaults.poll).toMatchObject({ enabled: true, maxRequestsPerSecond: 5, batchSize: 20 });
    expect(defaults.receiver.bodyLimitBytes).toBe(256 * 1024);
    const bad = trackingSettingsSchema.safeParse({ poll: { maxRequestsPerSecond: 0, batchSise: 3 } });
    expect(bad.success).toBe(false);
    const paths = bad.error!.issues.map((issue) =>
      [...issue.path, ...('keys' in issue ? issue.keys : [])].join('.'),
    );
    expect(paths).toEqual(expect.arrayContaining(['poll.maxRequestsPerSecond', 'poll.batchSise']));
  });
});
