import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { App } from '../../src/app.js';
import { loadSettings, SettingsError } from '../../src/config/index.js';
import { routerFor } from '../../src/notify/index.js';

const dirs: string[] = [];
const SLACK_URL = 'https://hooks.slack.example/services/T000/B000/slack-secret-path';
const WEBHOOK_SECRET = `whsec_${Buffer.from('a signing key of 32 bytes, ok!!').toString('base64')}`;
const SMTP_PASSWORD = 'smtp-pass-w0rd';

function tempDir(files: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'treasury-notify-settings-'));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

function settingsError(load: () => unknown): SettingsError {
  try {
    load();
  } catch (error) {
    if (error instanceof SettingsError) return error;
    throw error;
  }
  throw new Error('expected a SettingsError');
}

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** The example, with the secrets in a file, in the environment and inline. */
const EXAMPLE = `notifications:
  channels:
    finance-slack: { type: slack, webhookUrl: { file: slack_url } }
    erp:           { type: webhook, url: https://erp.example/hooks/treasury, secret: { env: ERP_SECRET } }
    desk-mail:     { type: email, smtp: "smtp://bot:${SMTP_PASSWORD}@mail:587", from: bot@example.com, to: [desk@example.com] }
  routes:
    - events: [order_failed, cycle_unsure, strategy_halted, kill_switch, discrepancy]
      channels: [finance-slack, desk-mail]
    - events: ['*']
      channels: [erp]
  digest: { at: "18:00", timezone: America/Sao_Paulo, channels: [desk-mail] }
`;

describe('notifications settings', () => {
  it('reads the example, with secrets from a file and from the environment', () => {
    const cwd = tempDir({ 'settings.yaml': EXAMPLE, slack_url: `${SLACK_URL}\n` });
    const settings = loadSettings({
      env: { TREASURY_CONFIG: 'settings.yaml', ERP_SECRET: WEBHOOK_SECRET },
      cwd,
    });
    const { channels, digest, delivery } = settings.notifications;
    expect(channels?.['finance-slack']).toEqual({ type: 'slack', webhookUrl: SLACK_URL });
    expect(channels?.erp).toMatchObject({ type: 'webhook', secret: WEBHOOK_SECRET });
    expect(channels?.['desk-mail']).toMatchObject({ type: 'email', to: ['desk@example.com'] });
    expect(digest).toEqual({ at: '18:00', timezone: 'America/Sao_Paulo', channels: ['desk-mail'] });
    expect(delivery).toMatchObject({ maxAgeMs: 86_400_000, timeoutMs: 10_000 });

    const route = routerFor(settings.notifications);
    expect(route('order_failed')).toEqual(['finance-slack', 'desk-mail', 'erp']);
    expect(route('order_placed')).toEqual(['erp']);
    expect(route('daily_digest')).toEqual(['desk-mail']);
  });

  it('takes the console address from TREASURY_CONSOLE_URL', () => {
    const settings = loadSettings({
      env: { TREASURY_CONSOLE_URL: 'https://console.example' },
      cwd: tempDir(),
    });
    expect(settings.notifications.consoleUrl).toBe('https://console.example');
    expect(settings.notifications.channels).toBeUndefined();
  });

  it('reports each mistake at its file:line, never echoing a secret', () => {
    const cwd = tempDir({
      'settings.yaml': `notifications:
  channels:
    chat: { type: slack, webhookUrl: { file: missing_file } }
    erp: { type: webhook, url: https://erp.example/h, secret: "not-whsec-${SMTP_PASSWORD}" }
    mail: { type: email, smtp: "http://user:${SMTP_PASSWORD}@mail", from: bot@example.com, to: [nobody] }
    pager: { type: pager }
  routes:
    - events: [order_failed, no_such_event]
      channels: [chat, nowhere]
  digest: { at: "25:00", timezone: Mars/Olympus, channels: [erp] }
`,
    });
    const error = settingsError(() => loadSettings({ env: { TREASURY_CONFIG: 'settings.yaml' }, cwd }));
    const file = join(cwd, 'settings.yaml');
    const lines = error.problems.map((problem) => `${problem.where} ${problem.key}`);
    expect(lines).toEqual(
      expect.arrayContaining([
        `${file}:3:38 notifications.channels.chat.webhookUrl`,
        `${file}:4:63 notifications.channels.erp.secret`,
        `${file}:5:32 notifications.channels.mail.smtp`,
        `${file}:5:95 notifications.channels.mail.to.0`,
        `${file}:6:20 notifications.channels.pager.type`,
        `${file}:8:30 notifications.routes.0.events.1`,
        `${file}:10:17 notifications.digest.at`,
        `${file}:10:36 notifications.digest.timezone`,
      ]),
    );
    expect(error.problems.find((p) => p.key.endsWith('chat.webhookUrl'))?.message).toMatch(
      /cannot read .*missing_file.*ENOENT/,
    );
    expect(error.message).not.toContain(SMTP_PASSWORD);
  });

  it('refuses a route or digest naming a channel that is not configured', () => {
    const cwd = tempDir({
      'settings.yaml': `notifications:
  channels:
    chat: { type: slack, webhookUrl: https://hooks.example/x }
  routes:
    - events: ['*']
      channels: [chat, nowhere]
  digest: { at: "18:00", channels: [elsewhere] }
`,
    });
    const error = settingsError(() => loadSettings({ env: { TREASURY_CONFIG: 'settings.yaml' }, cwd }));
    const file = join(cwd, 'settings.yaml');
    expect(error.problems).toEqual([
      {
        where: `${file}:6:24`,
        key: 'notifications.routes.0.channels.1',
        message: 'no such channel under notifications.channels (got "nowhere")',
      },
      {
        where: `${file}:7:37`,
        key: 'notifications.digest.channels.0',
        message: 'no such channel under notifications.channels (got "elsewhere")',
      },
    ]);
  });

  it('names an unset variable of { env: NAME }', () => {
    const cwd = tempDir({
      'settings.yaml':
        'notifications:\n  channels:\n    erp: { type: webhook, url: https://e.example/h, secret: { env: ERP_SECRET } }\n',
    });
    const error = settingsError(() => loadSettings({ env: { TREASURY_CONFIG: 'settings.yaml' }, cwd }));
    expect(error.problems).toEqual([
      {
        where: `${join(cwd, 'settings.yaml')}:3:61`,
        key: 'notifications.channels.erp.secret',
        message: 'environment variable ERP_SECRET is unset or empty',
      },
    ]);
  });

  it('keeps channel secrets out of the log lines', () => {
    const cwd = tempDir({ 'settings.yaml': EXAMPLE, slack_url: SLACK_URL });
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const app = new App({
      mode: 'admin',
      cwd,
      env: { TREASURY_CONFIG: 'settings.yaml', ERP_SECRET: WEBHOOK_SECRET },
      logDestination: destination,
    });
    app.logger.error(
      { url: SLACK_URL, secret: WEBHOOK_SECRET, smtp: `smtp://bot:${SMTP_PASSWORD}@mail:587` },
      `delivery to ${SLACK_URL} failed`,
    );
    const text = lines.join('');
    expect(text).toContain('delivery to');
    for (const secret of [SLACK_URL, WEBHOOK_SECRET, WEBHOOK_SECRET.slice(6), SMTP_PASSWORD])
      expect(text).not.toContain(secret);
  });
});
