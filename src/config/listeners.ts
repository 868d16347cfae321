/**
 * Where the worker listens. The operations routes (/metrics carries balances, /readyz the service's state)
 * stay on loopback unless an operator opens them; the webhook receiver, which the service must reach, has a
 * listener of its own that serves nothing else, and only when a webhook secret turns it on.
 *
 * The first release had one listener on 0.0.0.0:`http.port` for both. That setting keeps working for one
 * release, with a deprecation warning, as long as neither new address is set.
 */
import type { Settings } from './schema.js';

export interface ListenAddress {
  host: string;
  port: number;
}

export interface ListenerPlan {
  ops: ListenAddress;
  /** Absent without a webhook secret, or when the receiver shares the ops listener (`shared`). */
  webhook?: ListenAddress;
  /** The deprecated single listener: the receiver's route is served on the ops listener. */
  shared: boolean;
  /** Set when a deprecated setting is in use: the line to log. */
  deprecation?: string;
}

export const DEFAULT_OPS_ADDR = '127.0.0.1:9464';
export const DEFAULT_WEBHOOK_ADDR = '0.0.0.0:8080';

export function planListeners(settings: Pick<Settings, 'ops' | 'webhook' | 'http'>): ListenerPlan {
  const legacyPort = settings.http.port;
  const receiverOn = settings.webhook.secret !== undefined;
  const deprecation =
    legacyPort === undefined
      ? undefined
      : 'TREASURY_HTTP_PORT (http.port) is deprecated and goes in the next release: set TREASURY_OPS_ADDR (ops.addr: /metrics, /healthz, /readyz; default 127.0.0.1:9464) and TREASURY_WEBHOOK_ADDR (webhook.addr: the webhook receiver; default 0.0.0.0:8080)';
  if (legacyPort !== undefined && settings.ops.addr === undefined && settings.webhook.addr === undefined) {
    return { ops: { host: '0.0.0.0', port: legacyPort }, shared: receiverOn, deprecation };
  }
  return {
    ops: parseListenAddress(settings.ops.addr ?? DEFAULT_OPS_ADDR),
    ...(receiverOn ? { webhook: parseListenAddress(settings.webhook.addr ?? DEFAULT_WEBHOOK_ADDR) } : {}),
    shared: false,
    ...(deprecation === undefined
      ? {}
      : { deprecation: `${deprecation}; it is ignored while either is set` }),
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
