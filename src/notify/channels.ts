/**
 * The three kinds of channel, each sending one message and saying what became of it: `sent`, `retry` (the
 * receiver may take it later: a network error, a timeout, 408, 429, 5xx, an SMTP 4xx) or `rejected` (it
 * will not: any other 4xx, an SMTP 5xx), which is never retried.
 *
 * The generic webhook is signed the Standard Webhooks way (standardwebhooks.com), so receivers can verify
 * it with an existing library: `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, keyed
 * with the base64-decoded part of the `whsec_` secret.
 */
import { createHmac } from 'node:crypto';
import nodemailer from 'nodemailer';
import { request } from 'undici';
import type { ChannelSettings } from '../config/index.js';
import { withTimeLimit } from '../runtime/time-limit.js';
import { consoleLink, html, type OutgoingMessage, plainText, slackText, titleOf } from './message.js';

export type DeliveryOutcome =
  | { result: 'sent'; detail: string }
  | { result: 'retry' | 'rejected'; detail: string };

export interface Channel {
  readonly name: string;
  readonly type: ChannelSettings['type'];
  send(message: OutgoingMessage): Promise<DeliveryOutcome>;
  close(): Promise<void>;
}

export interface ChannelOptions {
  timeoutMs: number;
  consoleUrl: string | undefined;
  /** Unix seconds of the webhook signature's timestamp; the system clock unless a test fixes it. */
  clock?: () => Date;
}

export function createChannel(name: string, settings: ChannelSettings, options: ChannelOptions): Channel {
  if (settings.type === 'slack') return slackChannel(name, settings.webhookUrl, options);
  if (settings.type === 'webhook') return webhookChannel(name, settings, options);
  return emailChannel(name, settings, options);
}

function slackChannel(name: string, webhookUrl: string, options: ChannelOptions): Channel {
  return {
    name,
    type: 'slack',
    async send(message) {
      const link = consoleLink(message.subject, options.consoleUrl);
      const body = JSON.stringify({
        text: titleOf(message),
        blocks: [{ type: 'section', text: { type: 'mrkdwn', text: slackText(message, link) } }],
      });
      return post(webhookUrl, body, {}, options.timeoutMs);
    },
    close: async () => {},
  };
}

function webhookChannel(
  name: string,
  settings: Extract<ChannelSettings, { type: 'webhook' }>,
  options: ChannelOptions,
): Channel {
  const key = Buffer.from(settings.secret.slice('whsec_'.length), 'base64');
  const clock = options.clock ?? (() => new Date());
  return {
    name,
    type: 'webhook',
    async send(message) {
      const body = JSON.stringify({
        id: message.id,
        type: message.type,
        occurredAt: message.occurredAt.toISOString(),
        data: message.data,
      });
      const timestamp = String(Math.floor(clock().getTime() / 1000));
      return post(settings.url, body, signatureHeaders(key, message.id, timestamp, body), options.timeoutMs);
    },
    close: async () => {},
  };
}

export function signatureHeaders(
  key: Buffer,
  id: string,
  timestamp: string,
  body: string,
): Record<string, string> {
  const signature = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64');
  return { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': `v1,${signature}` };
}

async function post(
  url: string,
  body: string,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<DeliveryOutcome> {
  try {
    const { status, text } = await withTimeLimit(timeoutMs, async (signal) => {
      const answer = await request(url, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', 'user-agent': 'treasury-bot', ...headers },
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        signal,
      });
      return { status: answer.statusCode, text: (await answer.body.text()).slice(0, 200) };
    });
    const detail = `HTTP ${status}${text ? `: ${text}` : ''}`;
    if (status >= 200 && status < 300) return { result: 'sent', detail: `HTTP ${status}` };
    const final = status >= 400 && status < 500 && status !== 408 && status !== 429;
    return { result: final ? 'rejected' : 'retry', detail };
  } catch (error) {
    // The URL itself is never in the detail: a Slack webhook URL is a secret.
    return { result: 'retry', detail: `network: ${codeOf(error)}` };
  }
}

function emailChannel(
  name: string,
  settings: Extract<ChannelSettings, { type: 'email' }>,
  options: ChannelOptions,
): Channel {
  const transport = nodemailer.createTransport(settings.smtp, {
    connectionTimeout: options.timeoutMs,
    greetingTimeout: options.timeoutMs,
    socketTimeout: options.timeoutMs,
  });
  return {
    name,
    type: 'email',
    async send(message) {
      const link = consoleLink(message.subject, options.consoleUrl);
      try {
        const info = await transport.sendMail({
          from: settings.from,
          to: settings.to,
          subject: `[treasury-bot] ${titleOf(message)}`,
          text: plainText(message, link),
          html: html(message, link),
          headers: { 'X-Treasury-Notification-Id': message.id },
        });
        return { result: 'sent', detail: `SMTP ${info.response}`.slice(0, 200) };
      } catch (error) {
        const code = (error as { responseCode?: number }).responseCode;
        // SMTP 5xx is permanent (unknown mailbox, refused sender); 4xx and network errors pass.
        if (code !== undefined && code >= 500) return { result: 'rejected', detail: `SMTP ${code}` };
        return { result: 'retry', detail: code === undefined ? `network: ${codeOf(error)}` : `SMTP ${code}` };
      }
    },
    close: async () => transport.close(),
  };
}

function codeOf(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : error instanceof Error ? error.name : 'error';
}
