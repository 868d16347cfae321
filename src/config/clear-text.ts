/**
 * The settings that would send the service's token, the ledger, a console login or a mail password in clear
 * text: `http://` addresses of the service, of the receiver as the service reaches it, of the console and of
 * a webhook channel, and `smtp://` without `requireTLS=true` (nodemailer then sends in clear text whenever
 * the server offers no STARTTLS, or a man in the middle removes the offer). They are accepted, as a private
 * network may need them, but `run`, `console` and every command warn about each at start. Not in demo mode
 * (the built-in sandbox on loopback), and not for this host's own addresses.
 */
import { isDemo, type Settings } from './schema.js';

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

export function clearTextWarnings(
  settings: Pick<Settings, 'accounts' | 'webhook' | 'notifications'>,
): string[] {
  if (isDemo(settings)) return [];
  const warnings: string[] = [];
  const http = (key: string, url: string | undefined, carries: string) => {
    if (url === undefined) return;
    const { protocol, hostname } = new URL(url);
    if (protocol === 'http:' && !LOOPBACK.test(hostname)) {
      warnings.push(`INSECURE: ${key} is http://${hostname}: ${carries} travel in clear text; use https://`);
    }
  };
  for (const account of settings.accounts) {
    const key =
      account.name === 'default' ? 'api.url (TREASURY_API_URL)' : `accounts.${account.name}.api.url`;
    http(key, account.api.url, 'the bearer token and every order');
  }
  http(
    'webhook.publicUrl (TREASURY_WEBHOOK_PUBLIC_URL)',
    settings.webhook.publicUrl,
    'the webhook secret and the events',
  );
  http(
    'notifications.consoleUrl (TREASURY_CONSOLE_URL)',
    settings.notifications.consoleUrl,
    'console logins and pages',
  );
  for (const [name, channel] of Object.entries(settings.notifications.channels ?? {})) {
    if (channel.type === 'webhook') {
      http(`notifications.channels.${name}.url`, channel.url, 'the notifications');
    } else if (channel.type === 'email') {
      const url = new URL(channel.smtp);
      if (
        url.protocol === 'smtp:' &&
        !LOOPBACK.test(url.hostname) &&
        url.searchParams.get('requireTLS') !== 'true'
      ) {
        warnings.push(
          `INSECURE: notifications.channels.${name}.smtp is smtp://${url.hostname} without requireTLS=true: the mail password and messages go in clear text when STARTTLS is not offered; use smtps:// or add ?requireTLS=true`,
        );
      }
    }
  }
  return warnings;
}
