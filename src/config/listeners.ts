/**
 * Where the worker listens. The operations routes (/metrics carries balances, /readyz the service's state)
 * and the console stay on loopback unless an operator opens them; the webhook receiver, which the service
 * must reach, has a listener of its own that serves nothing else, and only when a webhook secret turns it on.
 * The console and /metrics never share a listener with the receiver.
 *
 * The first release had one listener on 0.0.0.0:`http.port` for both. That setting now names the receiver's
 * port alone (on 0.0.0.0, as before), with a deprecation warning, while webhook.addr is unset.
 */
import type { Settings } from './schema.js';

export interface ListenAddress {
  host: string;
  port: number;
}

export interface ListenerPlan {
  ops: ListenAddress;
  /** Absent without a webhook secret. */
  webhook?: ListenAddress;
  /** Set when a deprecated setting is in use: the line to log. */
  deprecation?: string;
}

export const DEFAULT_OPS_ADDR = '127.0.0.1:9464';
export const DEFAULT_WEBHOOK_ADDR = '0.0.0.0:8080';

export function planListeners(
  settings: Pick<Settings, 'ops' | 'webhook' | 'http' | 'accounts'>,
): ListenerPlan {
  const legacyPort = settings.http.port;
  // One listener for every account's receiver path; it starts with the first secret.
  const receiverOn = settings.accounts.some((account) => account.webhook.secret !== undefined);
  const webhookAddr = settings.webhook.addr;
  const deprecation =
    legacyPort === undefined
      ? undefined
      : webhookAddr === undefined
        ? `TREASURY_HTTP_PORT (http.port) is deprecated and goes in the next release: it now sets the webhook receiver's port alone (0.0.0.0:${legacyPort}); set TREASURY_WEBHOOK_ADDR (webhook.addr) instead. The console and /metrics are on TREASURY_OPS_ADDR (ops.addr; default 127.0.0.1:9464)`
        : 'TREASURY_HTTP_PORT (http.port) is deprecated and goes in the next release; it is ignored while TREASURY_WEBHOOK_ADDR is set';
  const receiver =
    webhookAddr !== undefined
      ? parseListenAddress(webhookAddr)
      : legacyPort !== undefined
        ? { host: '0.0.0.0', port: legacyPort }
        : parseListenAddress(DEFAULT_WEBHOOK_ADDR);
  return {
    ops: parseListenAddress(settings.ops.addr ?? DEFAULT_OPS_ADDR),
    ...(receiverOn ? { webhook: receiver } : {}),
    ...(deprecation === undefined ? {} : { deprecation }),
  };
}

/**
 * The host names the console answers to besides loopback's: the ops address's host when it names one (not
 * a wildcard), and the host of TREASURY_CONSOLE_URL, the address people open behind a proxy.
 */
export function consoleHosts(settings: Pick<Settings, 'notifications'>, ops: ListenAddress): string[] {
  const hosts = WILDCARDS.has(ops.host) ? [] : [ops.host];
  const { consoleUrl } = settings.notifications;
  if (consoleUrl !== undefined) hosts.push(new URL(consoleUrl).hostname.replace(/^\[(.*)\]$/, '$1'));
  return hosts;
}

const WILDCARDS = new Set(['0.0.0.0', '::', '']);

/** `host:port` or `[v6]:port`, already checked by the settings schema. */
export function parseListenAddress(text: string): ListenAddress {
  const split = text.lastIndexOf(':');
  const host = text.slice(0, split).replace(/^\[(.*)\]$/, '$1');
  return { host, port: Number(text.slice(split + 1)) };
}
