import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type ChannelSettings, notificationsSchema } from '../../src/config/index.js';
import { type Database, openDatabase } from '../../src/db/index.js';
import {
  type Channel,
  createChannel,
  deliverDue,
  type NotificationEvent,
  type NotificationType,
} from '../../src/notify/index.js';
import { createLogger } from '../../src/observability/logger.js';
import { createMetrics, type Metrics } from '../../src/observability/metrics.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { type HttpReceiver, startHttpReceiver, startSmtpReceiver } from './support/receivers.js';

/**
 * The delivery loop against real receivers on port 0 and the real outbox. The outbox and the loop read a
 * fake clock (backoff and maximum age without waiting); the webhook signature carries the real time, as
 * the independent verifier (the `standardwebhooks` package) checks it against its own clock.
 */

const start = new Date();
let now = start;
const clock = () => now;
const advance = (ms: number) => {
  now = new Date(now.getTime() + ms);
};

/** Each test routes to channels of its own, so the tests share one outbox without seeing each other's rows. */
let routeTo: string[] = [];
let test: TestDatabase;
let metrics: Metrics;
const logger = createLogger({ level: 'silent' });
const delivery = notificationsSchema.parse({
  delivery: { baseDelayMs: 1_000, maxDelayMs: 60_000, maxAgeMs: 3_600_000, timeoutMs: 2_000, batchSize: 10 },
}).delivery;
const secret = () => `whsec_${randomBytes(24).toString('base64')}`;

beforeAll(async () => {
  test = await createTestDatabase(undefined, { clock, routeNotifications: () => routeTo });
  metrics = createMetrics();
});
afterAll(async () => {
  await test?.drop();
});

function channels(entries: Record<string, ChannelSettings>): Map<string, Channel> {
  return new Map(
    Object.entries(entries).map(([name, settings]) => [
      name,
      createChannel(name, settings, {
        timeoutMs: delivery.timeoutMs,
        consoleUrl: 'https://console.example/',
      }),
    ]),
  );
}

function pass(channelMap: Map<string, Channel>, database: Database = test.database) {
  return deliverDue({
    database,
    channels: channelMap,
    settings: delivery,
    metrics,
    logger,
    clock,
    random: () => 0.5,
  });
}

function event(
  type: NotificationType,
  subject: string,
  data: NotificationEvent['data'] = {},
): NotificationEvent {
  return { type, subject, occurredAt: now, data };
}

async function rowsOf(channel: string) {
  const recent = await test.database.notifications.listRecent(1000);
  return recent.filter((row) => row.channel === channel).reverse();
}

/** Runs passes, stepping the fake clock past every backoff, until nothing of the channel is pending. */
async function drain(channelMap: Map<string, Channel>, channel: string, maxPasses = 50) {
  for (let index = 0; index < maxPasses; index++) {
    if ((await rowsOf(channel)).every((row) => row.status !== 'pending')) return;
    await pass(channelMap);
    advance(delivery.maxDelayMs);
  }
  throw new Error(`messages of ${channel} still pending after ${maxPasses} passes`);
}

const counter = async (name: string, labels: Record<string, string>) => {
  const metric = (await metrics.registry.getSingleMetric(name)?.get())?.values ?? [];
  return metric.find((value) => Object.entries(labels).every(([k, v]) => value.labels[k] === v))?.value ?? 0;
};

describe('notification channels against real receivers', () => {
  let slack: HttpReceiver;
  beforeAll(async () => {
    slack = await startHttpReceiver(() => 200);
  });
  afterAll(() => slack.close());

  it('posts Block Kit text with a link to the console page to a Slack-shaped endpoint', async () => {
    routeTo = ['slack-a'];
    await test.database.notifications.enqueueNow([
      event('order_failed', 'strategy:weekday-dca', { strategy: 'weekday-dca', reason: 'API_REJECTED' }),
    ]);
    await pass(channels({ 'slack-a': { type: 'slack', webhookUrl: slack.url } }));
    expect(slack.requests).toHaveLength(1);
    const body = JSON.parse(slack.requests[0]!.body);
    expect(body.text).toBe('Order failed');
    expect(body.blocks[0].type).toBe('section');
    expect(body.blocks[0].text.type).toBe('mrkdwn');
    expect(body.blocks[0].text.text).toContain('reason: API_REJECTED');
    expect(body.blocks[0].text.text).toContain(
      '<https://console.example/strategies/weekday-dca|Open in the console>',
    );
    expect((await rowsOf('slack-a'))[0]).toMatchObject({ status: 'sent', attempts: 1 });
  });

  it('signs webhooks so that an independent verifier accepts them, and not with another secret or an old timestamp', async () => {
    const key = secret();
    const verifier = new Webhook(key);
    const receiver = await startHttpReceiver(({ headers, body }) => {
      try {
        verifier.verify(body, headers as Record<string, string>);
        return 204;
      } catch {
        return 401;
      }
    });
    try {
      routeTo = ['erp-good', 'erp-wrong'];
      await test.database.notifications.enqueueNow([
        event('order_placed', 'order:ord-1', { orderId: 'ord-1', price: '5.4321', totalCost: '2500.00' }),
      ]);
      await pass(
        channels({
          'erp-good': { type: 'webhook', url: receiver.url, secret: key },
          'erp-wrong': { type: 'webhook', url: receiver.url, secret: secret() },
        }),
      );
      const good = (await rowsOf('erp-good'))[0]!;
      expect(good).toMatchObject({ status: 'sent', attempts: 1 });
      const accepted = receiver.requests.find((request) => request.status === 204)!;
      expect(accepted.headers['webhook-id']).toBe(good.id);
      expect(JSON.parse(accepted.body)).toEqual({
        id: good.id,
        type: 'order_placed',
        occurredAt: good.occurredAt.toISOString(),
        data: { orderId: 'ord-1', price: '5.4321', totalCost: '2500.00' },
      });
      // A 401 is a definite refusal: given up at once, never retried, and counted.
      expect((await rowsOf('erp-wrong'))[0]).toMatchObject({ status: 'dead', attempts: 1 });
      expect(await counter('treasury_notifications_dead_total', { channel: 'erp-wrong' })).toBe(1);

      // A signature six minutes old (a replayed request) is refused by the verifier.
      const old = createChannel(
        'erp-old',
        { type: 'webhook', url: receiver.url, secret: key },
        { timeoutMs: 2_000, consoleUrl: undefined, clock: () => new Date(Date.now() - 6 * 60_000) },
      );
      const outcome = await old.send({
        id: 'msg_old',
        type: 'test',
        subject: 'test',
        occurredAt: now,
        data: {},
      });
      expect(outcome).toMatchObject({ result: 'rejected', detail: expect.stringContaining('HTTP 401') });
    } finally {
      await receiver.close();
    }
  });

  it('mails plain text and HTML through an SMTP server', async () => {
    const smtp = await startSmtpReceiver();
    try {
      routeTo = ['desk-mail'];
      await test.database.notifications.enqueueNow([
        event('strategy_halted', 'strategy:dip-buyer', {
          strategy: 'dip-buyer',
          reason: 'several <candidates>',
        }),
      ]);
      const mail = channels({
        'desk-mail': { type: 'email', smtp: smtp.url, from: 'bot@example.com', to: ['desk@example.com'] },
      });
      await pass(mail);
      await Promise.all([...mail.values()].map((channel) => channel.close()));
      expect(smtp.mails).toHaveLength(1);
      const [received] = smtp.mails;
      expect(received!.to).toEqual(['desk@example.com']);
      expect(received!.raw).toContain('Subject: [treasury-bot] Strategy halted: an operator must decide');
      expect(received!.raw).toContain('Content-Type: text/plain');
      expect(received!.raw).toContain('Content-Type: text/html');
      const decoded = received!.raw.replace(/=\r?\n/g, '');
      expect(decoded).toContain('reason: several <candidates>');
      expect(decoded).toContain('several &lt;candidates&gt;');
      const row = (await rowsOf('desk-mail'))[0]!;
      expect(received!.raw.toLowerCase()).toContain(`x-treasury-notification-id: ${row.id}`);
      expect(row.status).toBe('sent');
    } finally {
      await smtp.close();
    }
  });

  it('gives up on a mailbox the server refuses (SMTP 5xx)', async () => {
    const smtp = await startSmtpReceiver({ rejectWith: 550 });
    try {
      routeTo = ['bad-mail'];
      await test.database.notifications.enqueueNow([event('kill_switch', 'kill_switch', { paused: true })]);
      const mail = channels({
        'bad-mail': { type: 'email', smtp: smtp.url, from: 'bot@example.com', to: ['nobody@example.com'] },
      });
      await pass(mail);
      await Promise.all([...mail.values()].map((channel) => channel.close()));
      expect((await rowsOf('bad-mail'))[0]).toMatchObject({
        status: 'dead',
        lastError: 'rejected: SMTP 550',
      });
    } finally {
      await smtp.close();
    }
  });
});

describe('delivery through outages', () => {
  it('delivers every message once the receiver is back, in order per subject, each under one id', async () => {
    let up = false;
    const receiver = await startHttpReceiver(() => (up ? 200 : 503));
    try {
      routeTo = ['outage'];
      const subjects = ['order:a', 'order:b', 'order:c'];
      const events = Array.from({ length: 12 }, (_, index) =>
        event('order_placed', subjects[index % 3]!, { n: index }),
      );
      await test.database.notifications.enqueueNow(events);
      const channelMap = channels({ outage: { type: 'slack', webhookUrl: receiver.url } });
      // Down for several passes: only the oldest message of each subject is tried.
      for (let index = 0; index < 4; index++) {
        await pass(channelMap);
        advance(delivery.maxDelayMs);
      }
      expect(receiver.requests.filter((request) => request.status === 503)).toHaveLength(12);
      const tried = new Set(receiver.requests.map((request) => Number(/n: (\d+)/.exec(request.body)![1])));
      expect([...tried].sort()).toEqual([0, 1, 2]);
      up = true;
      await drain(channelMap, 'outage');

      const delivered = receiver.requests.filter((request) => request.status === 200);
      const numbers = delivered.map((request) => Number(/n: (\d+)/.exec(request.body)![1]));
      expect([...numbers].sort((a, b) => a - b)).toEqual(events.map((_, index) => index));
      for (const subject of [0, 1, 2]) {
        const ofSubject = numbers.filter((n) => n % 3 === subject);
        expect(ofSubject).toEqual([...ofSubject].sort((a, b) => a - b));
      }
      const rows = await rowsOf('outage');
      expect(new Set(rows.map((row) => row.id)).size).toBe(12);
      expect(rows.every((row) => row.status === 'sent')).toBe(true);
      expect(rows.find((row) => row.data.n === 0)!.attempts).toBe(5);
      expect(await counter('treasury_notifications_total', { channel: 'outage', result: 'retry' })).toBe(12);
    } finally {
      await receiver.close();
    }
  });

  it('retries 408 and 429 but not another 4xx', async () => {
    const answers = [408, 429, 200];
    const receiver = await startHttpReceiver(() => answers.shift() ?? 200);
    const refusing = await startHttpReceiver(() => 404);
    try {
      routeTo = ['retry-4xx', 'final-4xx'];
      await test.database.notifications.enqueueNow([
        event('budget_reached', 'strategy:x', { period: 'day' }),
      ]);
      const channelMap = channels({
        'retry-4xx': { type: 'slack', webhookUrl: receiver.url },
        'final-4xx': { type: 'slack', webhookUrl: refusing.url },
      });
      await drain(channelMap, 'retry-4xx');
      expect((await rowsOf('retry-4xx'))[0]).toMatchObject({ status: 'sent', attempts: 3 });
      expect(refusing.requests).toHaveLength(1);
      expect((await rowsOf('final-4xx'))[0]).toMatchObject({ status: 'dead', attempts: 1 });
    } finally {
      await receiver.close();
      await refusing.close();
    }
  });

  it('gives a message up after the maximum age, counted in the metric', async () => {
    const receiver = await startHttpReceiver(() => 503);
    try {
      routeTo = ['too-late'];
      await test.database.notifications.enqueueNow([event('settlement_stuck', 'order:slow', {})]);
      const channelMap = channels({ 'too-late': { type: 'slack', webhookUrl: receiver.url } });
      await drain(channelMap, 'too-late', 200);
      const [row] = await rowsOf('too-late');
      expect(row!.status).toBe('dead');
      expect(row!.lastError).toMatch(/^expired: /);
      expect(await counter('treasury_notifications_total', { channel: 'too-late', result: 'expired' })).toBe(
        1,
      );
      expect(await counter('treasury_notifications_dead_total', { channel: 'too-late' })).toBe(1);
      // The last attempt came before the age ran out; none after.
      expect(now.getTime() - row!.createdAt.getTime()).toBeGreaterThanOrEqual(delivery.maxAgeMs);
    } finally {
      await receiver.close();
    }
  });

  it('writes a keyed message once however often it is enqueued', async () => {
    routeTo = ['keyed'];
    const keyed = { ...event('guard_blocked', 'strategy:k', {}), key: 'guard_blocked_k_2026-01-01' };
    expect(await test.database.notifications.enqueueNow([keyed])).toBe(1);
    expect(await test.database.notifications.enqueueNow([keyed])).toBe(0);
    expect(await rowsOf('keyed')).toHaveLength(1);
  });
});

const onPostgres = inject('treasuryDatabase').backend === 'postgres';
if (!onPostgres) {
  process.stderr.write(
    '\n!!! notify/delivery.test.ts: the two-replica case SKIPPED: it needs two connections to a PostgreSQL server\n\n',
  );
}

describe.skipIf(!onPostgres)('two delivery loops over one outbox', () => {
  it('delivers each message once', async () => {
    const second = await openDatabase({
      url: test.url,
      maxConnections: 3,
      clock,
      routeNotifications: () => routeTo,
    });
    const receiver = await startHttpReceiver(async () => {
      // A slow receiver keeps both loops busy at once.
      await new Promise((resolve) => setImmediate(resolve));
      return 200;
    });
    try {
      routeTo = ['shared'];
      const events = Array.from({ length: 60 }, (_, index) =>
        event('order_settled', `order:s${index % 7}`, { n: index }),
      );
      await test.database.notifications.enqueueNow(events);
      const channelMap = channels({ shared: { type: 'slack', webhookUrl: receiver.url } });
      for (let round = 0; round < 60; round++) {
        await Promise.all([pass(channelMap, test.database), pass(channelMap, second)]);
        if ((await rowsOf('shared')).every((row) => row.status === 'sent')) break;
      }
      const numbers = receiver.requests.map((request) => Number(/n: (\d+)/.exec(request.body)![1]));
      expect(numbers).toHaveLength(60);
      expect(new Set(numbers).size).toBe(60);
      expect((await rowsOf('shared')).every((row) => row.status === 'sent' && row.attempts === 1)).toBe(true);
    } finally {
      await receiver.close();
      await second.close();
    }
  });
});
