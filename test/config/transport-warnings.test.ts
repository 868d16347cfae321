import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { App } from '../../src/app.js';

/**
 * Addresses that would carry the token, the ledger or a password in clear text are accepted (a private
 * network may need them) but never silently: the worker warns at start, naming the setting, unless the
 * address is this host's own.
 */
function warningsOf(env: Record<string, string>, cwd = '/nonexistent'): string[] {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  new App({ mode: 'admin', cwd, env, logDestination: destination });
  return lines
    .map((line) => JSON.parse(line) as { level: string; msg: string })
    .filter((line) => line.level === 'warn' && line.msg.includes('INSECURE'))
    .map((line) => line.msg);
}

describe('clear-text addresses', () => {
  it('warns loudly for http:// service, receiver, console and webhook addresses and smtp:// without requireTLS', () => {
    const warnings = warningsOf({
      TREASURY_API_URL: 'http://otc.example.com',
      TREASURY_API_TOKEN: 'a-token',
      TREASURY_WEBHOOK_PUBLIC_URL: 'http://treasury.example.com',
      TREASURY_CONSOLE_URL: 'http://console.example.com',
    });
    expect(warnings).toHaveLength(3);
    expect(warnings.join('\n')).toMatch(/api\.url.*webhook\.publicUrl.*notifications\.consoleUrl/s);
  });

  it('warns for the email and webhook channels that would send in clear text', async () => {
    const cwd = await mkdtemp(join(tmpdir(), 'tb-transport-'));
    await writeFile(
      join(cwd, 'settings.yaml'),
      [
        'notifications:',
        '  channels:',
        '    plain: { type: email, smtp: "smtp://bot:pw@mail.example.com:587", from: bot@example.com, to: [ops@example.com] }',
        '    starttls: { type: email, smtp: "smtp://bot:pw@mail.example.com:587?requireTLS=true", from: bot@example.com, to: [ops@example.com] }',
        '    tls: { type: email, smtp: "smtps://bot:pw@mail.example.com:465", from: bot@example.com, to: [ops@example.com] }',
        '    erp: { type: webhook, url: "http://erp.example.com/hook", secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw }',
        '',
      ].join('\n'),
    );
    const warnings = warningsOf(
      {
        TREASURY_CONFIG: 'settings.yaml',
        TREASURY_API_URL: 'https://otc.example.com',
        TREASURY_API_TOKEN: 'a-token',
      },
      cwd,
    );
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toContain('notifications.channels.plain.smtp');
    expect(warnings[0]).not.toContain(':pw@');
    expect(warnings[1]).toContain('notifications.channels.erp.url');
  });

  it('stays quiet for https, for this host’s own addresses, and in demo mode', () => {
    expect(
      warningsOf({
        TREASURY_API_URL: 'https://otc.example.com',
        TREASURY_API_TOKEN: 'a-token',
        TREASURY_CONSOLE_URL: 'http://127.0.0.1:9464',
      }),
    ).toEqual([]);
    expect(warningsOf({ TREASURY_API_URL: 'http://localhost:3100', TREASURY_API_TOKEN: 'a-token' })).toEqual(
      [],
    );
    expect(warningsOf({})).toEqual([]);
  });
});
