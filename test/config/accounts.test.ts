/**
 * Settings of several accounts: `accounts:` as a list, each account's secrets from files, the single `api:`
 * block as the account `default`, and the mistakes an operator can make with them, each named.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isDemo, loadSettings, SettingsError } from '../../src/config/index.js';

const dirs: string[] = [];

function tempDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'treasury-accounts-'));
  dirs.push(dir);
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
  return dir;
}

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const TWO_ACCOUNTS = `accounts:
  - name: northco
    api:
      url: https://otc.example/north
      tokenFile: north-token
      rateLimit: 5
    webhook:
      secretFile: north-hook
  - name: southco
    api:
      url: https://otc.example/south
      tokenFile: south-token
      format: msgpack
`;

function problemsOf(load: () => unknown): { where: string; key: string; message: string }[] {
  try {
    load();
  } catch (error) {
    if (error instanceof SettingsError) return [...error.problems];
    throw error;
  }
  throw new Error('the settings were accepted');
}

describe('accounts: settings', () => {
  it('reads each account with its own token, secret and transport', () => {
    const cwd = tempDir({
      's.yaml': TWO_ACCOUNTS,
      'north-token': 'north-token-value\n',
      'north-hook': 'north-webhook-secret-24ch\n',
      'south-token': 'south-token-value\n',
    });
    const settings = loadSettings({ env: { TREASURY_CONFIG: 's.yaml' }, cwd });
    expect(settings.accounts.map((account) => account.name)).toEqual(['northco', 'southco']);
    expect(settings.accounts[0]).toMatchObject({
      api: { url: 'https://otc.example/north', token: 'north-token-value', rateLimit: 5, format: 'json' },
      webhook: { secret: 'north-webhook-secret-24ch' },
    });
    expect(settings.accounts[1]).toMatchObject({
      api: { url: 'https://otc.example/south', token: 'south-token-value', format: 'msgpack' },
      webhook: {},
    });
    expect(settings.accounts[1]!.api).not.toHaveProperty('tokenFile');
    expect(isDemo(settings)).toBe(false);
  });

  it('keeps the single api: block working as the account named default', () => {
    const cwd = tempDir({ 's.yaml': 'api:\n  url: https://otc.example\n  token: single-token\n' });
    const settings = loadSettings({ env: { TREASURY_CONFIG: 's.yaml' }, cwd });
    expect(settings.accounts).toEqual([
      expect.objectContaining({ name: 'default', api: expect.objectContaining({ token: 'single-token' }) }),
    ]);
    const fromEnv = loadSettings({
      env: { TREASURY_API_URL: 'https://env.example', TREASURY_WEBHOOK_SECRET: 'env-webhook-secret-24c' },
      cwd,
    });
    expect(fromEnv.accounts[0]).toMatchObject({
      name: 'default',
      api: { url: 'https://env.example' },
      webhook: { secret: 'env-webhook-secret-24c' },
    });
  });

  it('refuses accounts: mixed with api: or the api variables, naming where each came from', () => {
    const cwd = tempDir({
      's.yaml': `api:\n  format: msgpack\n${TWO_ACCOUNTS}`,
      'north-token': 'n',
      'north-hook': 'north-webhook-secret-24ch',
      'south-token': 's',
    });
    const problems = problemsOf(() =>
      loadSettings({ env: { TREASURY_CONFIG: 's.yaml', TREASURY_API_URL: 'https://x.example' }, cwd }),
    );
    expect(problems.map((problem) => [problem.key, problem.where])).toEqual(
      expect.arrayContaining([
        ['api.format', `${join(cwd, 's.yaml')}:2:11`],
        ['api.url', 'env TREASURY_API_URL'],
      ]),
    );
    expect(problems[0]!.message).toContain('cannot be set together with accounts:');
  });

  it('names a bad account name, a name listed twice and a missing service address', () => {
    const cwd = tempDir({
      's.yaml': `accounts:
  - name: North_Co
    api: { url: https://a.example, token: t1 }
  - name: southco
    api: { url: https://b.example, token: t2 }
  - name: southco
    api: { token: t3 }
`,
    });
    const problems = problemsOf(() => loadSettings({ env: { TREASURY_CONFIG: 's.yaml' }, cwd }));
    const file = join(cwd, 's.yaml');
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          key: 'accounts.0.name',
          where: `${file}:2:11`,
          message: expect.stringContaining('(got "North_Co")'),
        }),
        expect.objectContaining({
          key: 'accounts.2.name',
          message: 'account southco is listed twice (got "southco")',
        }),
        expect.objectContaining({
          key: 'accounts.2.api.url',
          message: expect.stringContaining('is required'),
        }),
      ]),
    );
  });

  it('never echoes a token written inline in an account, even when it is refused', () => {
    const cwd = tempDir({
      's.yaml': 'accounts:\n  - name: northco\n    api: { url: https://a.example, token: "" }\n',
    });
    const problems = problemsOf(() => loadSettings({ env: { TREASURY_CONFIG: 's.yaml' }, cwd }));
    expect(problems).toEqual([expect.objectContaining({ key: 'accounts.0.api.token' })]);
    expect(problems[0]!.message).not.toContain('got');
  });

  it('reports an unreadable token file of an account against its tokenFile setting', () => {
    const cwd = tempDir({
      's.yaml': 'accounts:\n  - name: northco\n    api: { url: https://a.example, tokenFile: absent }\n',
    });
    const problems = problemsOf(() => loadSettings({ env: { TREASURY_CONFIG: 's.yaml' }, cwd }));
    expect(problems).toEqual([
      expect.objectContaining({
        key: 'accounts.0.api.tokenFile',
        message: `cannot read "${join(cwd, 'absent')}" (ENOENT)`,
      }),
    ]);
  });

  it('is demo mode when no account names a service', () => {
    const cwd = tempDir({ 's.yaml': 'accounts:\n  - name: northco\n  - name: southco\n' });
    const settings = loadSettings({ env: { TREASURY_CONFIG: 's.yaml' }, cwd });
    expect(isDemo(settings)).toBe(true);
  });
});
