import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadSettings, SettingsError } from '../../src/config/index.js';

const REPO_ROOT = join(import.meta.dirname, '..', '..');
const dirs: string[] = [];

function tempDir(files: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'treasury-settings-'));
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

describe('loadSettings', () => {
  it('uses the schema defaults when the default file is absent, resolving paths from cwd', () => {
    const cwd = tempDir();
    const settings = loadSettings({ env: {}, cwd });
    expect(settings.configFile).toBeUndefined();
    // No accounts: the single api: block is the account `default`.
    expect(settings.accounts).toHaveLength(1);
    expect(settings.accounts[0]).toMatchObject({
      name: 'default',
      api: { format: 'json', connections: 8, timeouts: { headersMs: 5_000 } },
    });
    expect(settings.accounts[0]!.api.url).toBeUndefined();
    expect(settings.http.port).toBeUndefined();
    expect(settings.ops.addr).toBeUndefined();
    expect(settings.dryRun).toBe(false);
    expect(settings.database.dataDir).toBe(join(cwd, 'data'));
    // Three replicas at defaults fit PostgreSQL's default max_connections (100) with room for others.
    expect(settings.database.connections).toBe(10);
    expect(settings.strategies.path).toBe(join(cwd, 'strategies'));
    expect(settings.engine).toMatchObject({
      quoteWindowMs: 5_000,
      deadlineMarginMs: 1_000,
      maxFreshQuotes: 2,
    });
    expect(settings.tracking).toMatchObject({
      poll: { enabled: true },
      receiver: { bodyLimitBytes: 262_144 },
    });
  });

  it('ships config/default.yaml with exactly the schema defaults', () => {
    const shipped = loadSettings({ env: {}, cwd: REPO_ROOT });
    const builtIn = loadSettings({ env: {}, cwd: tempDir() });
    expect(shipped.configFile).toBe(join(REPO_ROOT, 'config', 'default.yaml'));
    const strip = (s: typeof shipped) => ({ ...s, configFile: null, database: null, strategies: null });
    expect(strip(shipped)).toEqual(strip(builtIn));
    expect(shipped.database.connections).toBe(builtIn.database.connections);
  });

  it('a missing explicit file is an error naming it', () => {
    const cwd = tempDir();
    const error = settingsError(() => loadSettings({ env: { TREASURY_CONFIG: 'nope.yaml' }, cwd }));
    expect(error.message).toBe(`invalid settings: ${join(cwd, 'nope.yaml')}: file not found`);
  });

  it('reads the file named by TREASURY_CONFIG, and env wins over it', () => {
    const cwd = tempDir({
      'w.yaml':
        'api:\n  url: http://file.example\n  format: msgpack\nhttp:\n  port: 1000\ndryRun: true\nstrategies:\n  changes: approve\n',
    });
    const fromFile = loadSettings({ env: { TREASURY_CONFIG: 'w.yaml' }, cwd });
    expect(fromFile).toMatchObject({
      accounts: [{ name: 'default', api: { url: 'http://file.example', format: 'msgpack' } }],
      http: { port: 1000 },
      strategies: { changes: 'approve' },
    });
    expect(fromFile.dryRun).toBe(true);
    const env = {
      TREASURY_CONFIG: 'w.yaml',
      TREASURY_API_URL: 'https://env.example/otc',
      TREASURY_API_FORMAT: 'json',
      TREASURY_HTTP_PORT: '2000',
      TREASURY_DRY_RUN: '0',
      TREASURY_API_RETRY_MAX_ATTEMPTS: '5',
      DATABASE_URL: 'postgres://root@127.0.0.1:5432/test',
      TREASURY_DATA_DIR: '/var/lib/treasury',
      TREASURY_DATABASE_CONNECTIONS: '4',
      TREASURY_STRATEGIES: 'strats',
      TREASURY_STRATEGY_CHANGES: 'apply',
      TREASURY_WEBHOOK_PUBLIC_URL: 'https://hooks.example',
      LOG_LEVEL: 'debug',
      TREASURY_API_TIMEOUT_UNKNOWN: 'ignored',
      TREASURY_WEBHOOK_SECRET: '',
    };
    const settings = loadSettings({ env, cwd });
    expect(settings).toMatchObject({
      accounts: [
        {
          name: 'default',
          api: { url: 'https://env.example/otc', format: 'json', retry: { maxAttempts: 5 } },
        },
      ],
      http: { port: 2000 },
      dryRun: false,
      database: { url: 'postgres://root@127.0.0.1:5432/test', dataDir: '/var/lib/treasury', connections: 4 },
      strategies: { path: join(cwd, 'strats'), changes: 'apply' },
      webhook: { publicUrl: 'https://hooks.example' },
      log: { level: 'debug' },
    });
    expect(settings.accounts[0]!.webhook.secret).toBeUndefined();
  });

  it('reads secrets from *_FILE, trimmed; the direct env variable wins over the file setting', () => {
    const cwd = tempDir({
      token: 'file-token-value\n',
      hook: 'a-webhook-secret-of-24ch\n',
      'w.yaml': 'api:\n  tokenFile: token\nwebhook:\n  secretFile: hook\n',
    });
    const fromFiles = loadSettings({ env: { TREASURY_CONFIG: 'w.yaml' }, cwd });
    expect(fromFiles.accounts[0]!.api.token).toBe('file-token-value');
    expect(fromFiles.accounts[0]!.webhook.secret).toBe('a-webhook-secret-of-24ch');
    expect(fromFiles.accounts[0]!.api).not.toHaveProperty('tokenFile');

    const envWins = loadSettings({
      env: { TREASURY_CONFIG: 'w.yaml', TREASURY_API_TOKEN: 'env-token' },
      cwd,
    });
    expect(envWins.accounts[0]!.api.token).toBe('env-token');
    const envFile = loadSettings({ env: { TREASURY_API_TOKEN_FILE: join(cwd, 'token') }, cwd });
    expect(envFile.accounts[0]!.api.token).toBe('file-token-value');
  });

  it('reads the database connection string, which carries its password, from DATABASE_URL_FILE', () => {
    const cwd = tempDir({ url: 'postgres://treasury:s3cret-pw@db:5432/treasury\n' });
    const settings = loadSettings({ env: { DATABASE_URL_FILE: 'url' }, cwd });
    expect(settings.database.url).toBe('postgres://treasury:s3cret-pw@db:5432/treasury');
    expect(settings.database).not.toHaveProperty('urlFile');
    const both = settingsError(() =>
      loadSettings({ env: { DATABASE_URL: 'postgres://x@db/x', DATABASE_URL_FILE: 'url' }, cwd }),
    );
    expect(both.message).toContain('set only one of DATABASE_URL and DATABASE_URL_FILE');
  });

  it('refuses both forms of one secret from the same source, and unreadable secret files', () => {
    const cwd = tempDir({ 'both.yaml': 'api:\n  token: abc\n  tokenFile: token\n' });
    const both = settingsError(() =>
      loadSettings({ env: { TREASURY_API_TOKEN: 'x-token', TREASURY_API_TOKEN_FILE: 'token' }, cwd }),
    );
    expect(both.message).toContain('set only one of TREASURY_API_TOKEN and TREASURY_API_TOKEN_FILE');
    const inFile = settingsError(() => loadSettings({ env: { TREASURY_CONFIG: 'both.yaml' }, cwd }));
    expect(inFile.message).toMatch(
      /both\.yaml:\d+:\d+: api\.tokenFile: set only one of api\.token and api\.tokenFile/,
    );
    const missing = settingsError(() =>
      loadSettings({ env: { TREASURY_WEBHOOK_SECRET_FILE: 'absent' }, cwd }),
    );
    expect(missing.message).toBe(
      `invalid settings: env TREASURY_WEBHOOK_SECRET_FILE: webhook.secretFile: cannot read "${join(cwd, 'absent')}" (ENOENT)`,
    );
  });

  it('names the file, line, column, key and value of a bad setting, and every problem at once', () => {
    const cwd = tempDir({
      'bad.yaml': [
        'api:',
        '  format: xml',
        '  timeouts:',
        '    connectMs: -1',
        '  formt: json',
        'http:',
        '  port: 70000',
        'dryRun: maybe',
      ].join('\n'),
    });
    const error = settingsError(() => loadSettings({ env: { TREASURY_CONFIG: 'bad.yaml' }, cwd }));
    const file = join(cwd, 'bad.yaml');
    expect(error.code).toBe('SETTINGS_INVALID');
    expect(error.problems.map((problem) => [problem.where, problem.key])).toEqual(
      expect.arrayContaining([
        [`${file}:2:11`, 'api.format'],
        [`${file}:4:16`, 'api.timeouts.connectMs'],
        [`${file}:5:10`, 'api.formt'],
        [`${file}:7:9`, 'http.port'],
        [`${file}:8:9`, 'dryRun'],
      ]),
    );
    expect(error.message).toContain(
      `${file}:2:11: api.format: Invalid option: expected one of "json"|"msgpack" (got "xml")`,
    );
    expect(error.message).toContain(`${file}:5:10: api.formt: unknown setting`);
  });

  it('names the environment variable of a bad value', () => {
    const error = settingsError(() =>
      loadSettings({
        env: {
          TREASURY_HTTP_PORT: 'eighty',
          TREASURY_DRY_RUN: 'perhaps',
          LOG_LEVEL: 'loud',
          TREASURY_API_URL: 'ftp://x',
          TREASURY_STRATEGY_CHANGES: 'maybe',
          TREASURY_DATABASE_CONNECTIONS: '1',
        },
        cwd: tempDir(),
      }),
    );
    expect(error.problems).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          where: 'env TREASURY_HTTP_PORT',
          key: 'http.port',
          message: expect.stringContaining('"eighty"'),
        }),
        expect.objectContaining({ where: 'env TREASURY_DRY_RUN', key: 'dryRun' }),
        expect.objectContaining({ where: 'env LOG_LEVEL', key: 'log.level' }),
        expect.objectContaining({ where: 'env TREASURY_API_URL', key: 'api.url' }),
        expect.objectContaining({
          where: 'env TREASURY_STRATEGY_CHANGES',
          key: 'strategies.changes',
          message: expect.stringContaining('"maybe"'),
        }),
        expect.objectContaining({
          where: 'env TREASURY_DATABASE_CONNECTIONS',
          key: 'database.connections',
          message: expect.stringContaining('expected number to be >=2 (got 1)'),
        }),
      ]),
    );
  });

  it('reports YAML syntax errors with their position', () => {
    const cwd = tempDir({ 'broken.yaml': 'api:\n  format: json\n   bad: [unclosed\n' });
    const error = settingsError(() => loadSettings({ env: { TREASURY_CONFIG: 'broken.yaml' }, cwd }));
    expect(error.message).toMatch(new RegExp(`${join(cwd, 'broken.yaml')}:\\d+:\\d+: YAML `));
  });

  it('never echoes a secret value, wherever it came from', () => {
    const secret = 'tiny-secret';
    const dbUrl = 'mysql://admin:hunter2-password@db/x';
    const token = 'tok-value-in-file';
    const cwd = tempDir({ 's.yaml': `webhook:\n  secret: ${secret}\napi:\n  token: ${token}\n  bogus: 1\n` });
    for (const env of [
      { TREASURY_CONFIG: 's.yaml' },
      {
        TREASURY_WEBHOOK_SECRET: secret,
        DATABASE_URL: dbUrl,
        TREASURY_API_TOKEN: token,
        TREASURY_HTTP_PORT: 'x',
      },
    ]) {
      const error = settingsError(() => loadSettings({ env, cwd }));
      const rendered = `${error.message} ${JSON.stringify(error)} ${error.stack}`;
      expect(rendered).toContain('webhook.secret: must be at least 16 characters');
      for (const value of [secret, 'hunter2', token]) expect(rendered).not.toContain(value);
    }
  });
});
