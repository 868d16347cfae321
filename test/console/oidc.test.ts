import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSettings, SettingsError } from '../../src/config/index.js';
import { oidcSchema } from '../../src/config/schema.js';
import { LOGIN_ADDRESS_FAILURES } from '../../src/console/login-throttle.js';
import { personNameFrom, roleFromGroups } from '../../src/console/oidc.js';
import { hashPassword } from '../../src/console/passwords.js';
import { registerConsole } from '../../src/console/server.js';
import { type ConsoleStore, openConsoleStore } from '../../src/db/index.js';
import { createReceiverServer, listen } from '../../src/observability/http-server.js';
import { createTestDatabase, type TestDatabase, testBackends } from '../support/database.js';
import {
  CLIENT_ID,
  CLIENT_SECRET,
  openIdentityProvider,
  passProvider,
  type RunningProvider,
} from '../support/identity-provider.js';
import { chromiumFor, LAUNCH_ARGS } from './chromium.js';
import { ConsoleClient, capturingLogger, PASSWORD, TEST_COST } from './support.js';

const CHROMIUM = chromiumFor('oidc.test.ts');

/**
 * Single sign-on against a real OpenID provider (oidc-provider) started here: the authorization code flow
 * with PKCE, state and nonce, at the HTTP level (a cookie-keeping client that fills the provider's
 * development login and consent forms) and once in Chromium. Two consoles share one database: one with
 * local passwords too, one with single sign-on alone.
 */
describe.each(testBackends())(
  'single sign-on through an OpenID provider (%s)',
  { timeout: 60_000 },
  (backend) => {
    let provider: RunningProvider;
    let test: TestDatabase;
    let store: ConsoleStore;
    const servers: FastifyInstance[] = [];
    /** The console with local passwords and single sign-on; the one with single sign-on alone. */
    let both: string;
    let ssoOnly: string;
    /** The console of two accounts, whose people's accounts come from the provider's groups claim. */
    let group: string;
    const logLines: string[] = [];

    async function startConsole(
      localLogin: boolean,
      issuer: string,
      accounts: { names: string[]; claim?: string } = { names: ['default'] },
    ): Promise<string> {
      const server = createReceiverServer(undefined, ['127.0.0.1']);
      const logger = capturingLogger(logLines);
      const oidc = oidcSchema.parse({
        issuer,
        clientId: CLIENT_ID,
        clientSecret: CLIENT_SECRET,
        scopes: ['openid', 'email', 'profile', 'groups'],
        roles: {
          admin: ['treasury-admins'],
          approver: ['treasury-approvers'],
          viewer: ['treasury-viewers', 'finance'],
        },
        allowedDomains: ['Example.com'],
        ...(accounts.claim === undefined ? {} : { accountsClaim: accounts.claim }),
      });
      registerConsole(server, {
        database: test.database,
        store,
        clock: () => new Date(),
        logger,
        accounts: new Map(accounts.names.map((name) => [name, { name }])),
        oidc,
        localLogin,
      });
      servers.push(server);
      return `http://127.0.0.1:${await listen(server, '127.0.0.1', 0)}`;
    }

    beforeAll(async () => {
      provider = await openIdentityProvider();
      test = await createTestDatabase(backend);
      store = openConsoleStore(test.database);
      await store.people.add(
        { name: 'local-admin', role: 'admin', passwordHash: await hashPassword(PASSWORD, TEST_COST) },
        'test-setup',
      );
      both = await startConsole(true, provider.issuer);
      ssoOnly = await startConsole(false, provider.issuer);
      group = await startConsole(true, provider.issuer, { names: ['northco', 'southco'], claim: 'groups' });
      provider.serve([
        `${group}/login/oidc/callback`,
        `${both}/login/oidc/callback`,
        `${ssoOnly}/login/oidc/callback`,
        // The browser's way in: localhost is another site than the provider's 127.0.0.1.
        `${ssoOnly.replace('127.0.0.1', 'localhost')}/login/oidc/callback`,
      ]);
    });

    afterAll(async () => {
      for (const server of servers) await server.close();
      await provider?.close();
      await test?.drop();
    });

    /** Starts at the console, passes the provider as `login`, and brings the provider's answer back. */
    async function signIn(
      client: ConsoleClient,
      login: string,
      tamper: { authorization?: (url: URL) => void; callback?: (url: URL) => void } = {},
    ) {
      const start = await client.get('/login/oidc');
      expect(start.status).toBe(303);
      const authorization = new URL(start.location ?? '');
      expect(authorization.origin).toBe(provider.issuer);
      expect(authorization.searchParams.get('code_challenge_method')).toBe('S256');
      tamper.authorization?.(authorization);
      const callback = await passProvider(authorization.href, login);
      tamper.callback?.(callback);
      return client.get(`${callback.pathname}${callback.search}`);
    }

    it('creates a person at the first sign-in with the role of their group, audited, without a password', async () => {
      provider.directory.set('sub-ana', {
        email: 'ana.souza@example.com',
        groups: ['staff', 'treasury-admins'],
      });
      const client = new ConsoleClient(both);
      const answer = await signIn(client, 'sub-ana');
      expect(answer.status).toBe(200);
      expect(answer.body).toContain('Signed in as ana.souza (admin)');
      const users = await client.get('/users');
      expect(users.status).toBe(200);
      expect(users.body).toContain('ana.souza');
      const person = await store.people.findByName('ana.souza');
      expect(person).toMatchObject({ role: 'admin', passwordHash: null });
      const audit = await store.audit.list();
      expect(audit).toContainEqual(
        expect.objectContaining({
          action: 'user.add',
          subject: 'user:ana.souza',
          after: expect.objectContaining({ source: 'sso', subject: 'sub-ana', role: 'admin' }),
        }),
      );
      // Nothing of the client secret reaches the log.
      expect(logLines.join('')).not.toContain(CLIENT_SECRET);
    });

    it('refuses a local password for a person of single sign-on (it would bypass the provider)', async () => {
      provider.directory.set('sub-erin', { email: 'erin@example.com', groups: ['treasury-admins'] });
      expect((await signIn(new ConsoleClient(both), 'sub-erin')).status).toBe(200);
      await expect(store.people.setPassword('Erin', 'scrypt$any', 'admin')).rejects.toMatchObject({
        code: 'USER_SIGNS_IN_WITH_SSO',
      });
      expect(await store.people.findByName('erin')).toMatchObject({ passwordHash: null });
    });

    it('refuses a person none of whose groups maps to a role, with a page that says so, creating nobody', async () => {
      provider.directory.set('sub-bruno', { email: 'bruno@example.com', groups: ['marketing'] });
      const client = new ConsoleClient(both);
      const answer = await signIn(client, 'sub-bruno');
      expect(answer.status).toBe(403);
      expect(answer.body).toContain('none of their groups gives a role in this console');
      expect(await store.people.findByName('bruno')).toBeNull();
      expect((await client.get('/')).location).toBe('/login');
    });

    it('refuses an address outside the allowed domains', async () => {
      provider.directory.set('sub-dan', { email: 'dan@elsewhere.org', groups: ['treasury-admins'] });
      const answer = await signIn(new ConsoleClient(both), 'sub-dan');
      expect(answer.status).toBe(403);
      expect(answer.body).toContain('not an address of a domain this console accepts');
      expect(await store.people.findByName('dan')).toBeNull();
    });

    it('takes the role from the provider at every sign-in: a demoted person loses their rights and their old session', async () => {
      provider.directory.set('sub-carla', { email: 'carla@example.com', groups: ['treasury-admins'] });
      const before = new ConsoleClient(both);
      expect((await signIn(before, 'sub-carla')).status).toBe(200);
      expect((await before.get('/users')).status).toBe(200);

      // Demoted at the provider, and renamed there too: still the same person here, known by the subject.
      provider.directory.set('sub-carla', { email: 'carla.lima@example.com', groups: ['finance'] });
      const after = new ConsoleClient(both);
      expect((await signIn(after, 'sub-carla')).status).toBe(200);
      expect((await after.get('/users')).status).toBe(403);
      expect((await after.get('/')).status).toBe(200);
      // The session opened as an admin ended with the role change.
      expect((await before.get('/users')).location).toBe('/login');
      expect(await store.people.findByName('carla.lima')).toBeNull();
      expect(await store.people.findByName('carla')).toMatchObject({ role: 'viewer' });
      const audit = await store.audit.list();
      expect(audit).toContainEqual(
        expect.objectContaining({
          action: 'user.role',
          subject: 'user:carla',
          before: expect.objectContaining({ role: 'admin' }),
          after: expect.objectContaining({ role: 'viewer' }),
        }),
      );
    });

    it('takes the accounts from the provider at every sign-in (accountsClaim): a moved person loses the old account and session', async () => {
      provider.directory.set('sub-gil', {
        email: 'gil@example.com',
        groups: ['finance', 'northco', 'westco'],
      });
      const first = new ConsoleClient(group);
      expect((await signIn(first, 'sub-gil')).status).toBe(200);
      // Only the deployment's accounts the claim names: westco is none of them.
      expect(await store.people.findByName('gil')).toMatchObject({ role: 'viewer', accounts: ['northco'] });
      expect((await first.get('/orders?account=northco')).status).toBe(200);
      expect((await first.get('/orders?account=southco')).status).toBe(400);

      provider.directory.set('sub-gil', { email: 'gil@example.com', groups: ['finance', 'southco'] });
      const second = new ConsoleClient(group);
      expect((await signIn(second, 'sub-gil')).status).toBe(200);
      expect(await store.people.findByName('gil')).toMatchObject({ accounts: ['southco'] });
      expect((await second.get('/orders?account=southco')).status).toBe(200);
      // The session opened for northco ended with the change.
      expect((await first.get('/')).location).toBe('/login');
    });

    it('refuses a person whose accounts claim names none of the accounts, and lets an admin see all', async () => {
      provider.directory.set('sub-hugo', { email: 'hugo@example.com', groups: ['finance', 'westco'] });
      const refused = await signIn(new ConsoleClient(group), 'sub-hugo');
      expect(refused.status).toBe(403);
      expect(refused.body).toContain('names none of this console');
      expect(await store.people.findByName('hugo')).toBeNull();

      provider.directory.set('sub-iris', { email: 'iris@example.com', groups: ['treasury-admins'] });
      expect((await signIn(new ConsoleClient(group), 'sub-iris')).status).toBe(200);
      expect(await store.people.findByName('iris')).toMatchObject({ role: 'admin', accounts: null });
    });

    it('refuses an answer whose state was tampered with', async () => {
      provider.directory.set('sub-eva', { email: 'eva@example.com', groups: ['treasury-admins'] });
      const client = new ConsoleClient(both);
      const answer = await signIn(client, 'sub-eva', {
        callback: (url) => url.searchParams.set('state', 'a-state-of-the-attacker'),
      });
      expect(answer.status).toBe(401);
      expect(answer.body).toContain('did not check out');
      expect(answer.body).toContain('state');
      expect((await client.get('/')).location).toBe('/login');
      expect(await store.people.findByName('eva')).toBeNull();
    });

    it('refuses an ID token whose nonce is not the one this browser started with', async () => {
      provider.directory.set('sub-eva', { email: 'eva@example.com', groups: ['treasury-admins'] });
      const client = new ConsoleClient(both);
      const answer = await signIn(client, 'sub-eva', {
        authorization: (url) => url.searchParams.set('nonce', 'a-nonce-of-the-attacker'),
      });
      expect(answer.status).toBe(401);
      expect(answer.body).toContain('did not check out');
      expect(answer.body).toContain('nonce');
      expect((await client.get('/')).location).toBe('/login');
      expect(await store.people.findByName('eva')).toBeNull();
    });

    it('refuses a callback from a browser that started no sign-in', async () => {
      provider.directory.set('sub-eva', { email: 'eva@example.com', groups: ['treasury-admins'] });
      const started = new ConsoleClient(both);
      const start = await started.get('/login/oidc');
      const callback = await passProvider(start.location ?? '', 'sub-eva');
      const other = new ConsoleClient(both);
      const answer = await other.get(`${callback.pathname}${callback.search}`);
      expect(answer.status).toBe(401);
      expect(answer.body).toContain('No sign-in was started in this browser');
    });

    it('counts refused sign-ins against the per-address cap of the login throttle', async () => {
      const client = new ConsoleClient(both, { 'x-forwarded-for': '198.51.100.7' });
      const statuses: number[] = [];
      for (let attempt = 0; attempt <= LOGIN_ADDRESS_FAILURES; attempt++)
        statuses.push((await client.get('/login/oidc/callback?code=x&state=y')).status);
      expect(statuses.slice(0, LOGIN_ADDRESS_FAILURES)).toEqual(Array(LOGIN_ADDRESS_FAILURES).fill(401));
      expect(statuses[LOGIN_ADDRESS_FAILURES]).toBe(429);
      // Another address is not held back.
      const elsewhere = new ConsoleClient(both, { 'x-forwarded-for': '198.51.100.8' });
      expect((await elsewhere.get('/login/oidc/callback?code=x&state=y')).status).toBe(401);
    });

    it('offers both ways to log in while local passwords are on', async () => {
      const client = new ConsoleClient(both);
      const login = await client.get('/login');
      expect(login.body).toContain(`Sign in with ${new URL(provider.issuer).host}`);
      expect(login.body).toContain('name="password"');
      expect((await client.login('local-admin')).status).toBe(303);
    });

    it('with local login off, shows only the provider and refuses a password', async () => {
      const client = new ConsoleClient(ssoOnly);
      const login = await client.get('/login');
      expect(login.status).toBe(200);
      expect(login.body).toContain(`Sign in with ${new URL(provider.issuer).host}`);
      expect(login.body).not.toContain('name="password"');
      const csrf = client.cookie('tb_login_csrf') ?? '';
      const post = await client.post('/login', { _csrf: csrf, name: 'local-admin', password: PASSWORD });
      expect(post.status).toBe(403);
      expect(post.body).toContain('local passwords are off');
      expect((await client.get('/')).location).toBe('/login');
      // Single sign-on still lets people in.
      provider.directory.set('sub-fabio', { email: 'fabio@example.com', groups: ['treasury-approvers'] });
      expect((await signIn(client, 'sub-fabio')).status).toBe(200);
      expect(await store.people.findByName('fabio')).toMatchObject({ role: 'approver' });
    });

    // Once: the browser adds nothing a second backend would change.
    it.skipIf(!CHROMIUM || backend !== testBackends()[0])(
      'signs a person in through the provider’s pages in Chromium, landing on the overview with their role',
      async () => {
        provider.directory.set('sub-gil', { email: 'gil@example.com', groups: ['treasury-approvers'] });
        // The console at another site than the provider, as in production: the way back from the provider is
        // a cross-site navigation, which SameSite=Strict cookies do not follow.
        const console = ssoOnly.replace('127.0.0.1', 'localhost');
        const browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });
        try {
          const page = await browser.newPage();
          await page.goto(`${console}/`);
          await page.waitForURL(`${console}/login`);
          await page.click(`text=Sign in with ${new URL(provider.issuer).host}`);
          await page.waitForURL(`${provider.issuer}/**`);
          await page.fill('input[name=login]', 'sub-gil');
          await page.fill('input[name=password]', 'any');
          await page.click('button:has-text("Sign-in")');
          // The provider's consent page: the console asks for the person's e-mail, profile and groups.
          await page.click('button:has-text("Continue")');
          await page.waitForURL(`${console}/`);
          const header = await page.textContent('header');
          expect(header).toContain('gil');
          expect(header).toContain('approver');
        } finally {
          await browser.close();
        }
      },
    );
  },
);

describe('console.oidc and console.localLogin settings', () => {
  async function load(yaml: string, files: Record<string, string> = {}) {
    const folder = await mkdtemp(join(tmpdir(), 'tb-oidc-'));
    for (const [name, text] of Object.entries(files)) await writeFile(join(folder, name), text);
    await writeFile(join(folder, 'settings.yaml'), yaml);
    return () => loadSettings({ env: { TREASURY_CONFIG: join(folder, 'settings.yaml') }, cwd: folder });
  }
  const refusal = (run: () => unknown): string => {
    try {
      run();
    } catch (error) {
      if (error instanceof SettingsError) return error.message;
      throw error;
    }
    throw new Error('expected a SettingsError');
  };
  const OIDC = `console:
  oidc:
    issuer: https://login.example.com
    clientId: treasury
    clientSecretFile: secret.txt
    roles:
      admin: [treasury-admins]
`;

  it('reads the client secret from its file and keeps the defaults', async () => {
    const settings = (await load(OIDC, { 'secret.txt': 'the-secret-value\n' }))();
    expect(settings.console.localLogin).toBe(true);
    expect(settings.console.oidc).toMatchObject({
      clientSecret: 'the-secret-value',
      scopes: ['openid', 'email', 'profile'],
      roleClaim: 'groups',
      roles: { admin: ['treasury-admins'], viewer: [] },
    });
  });

  it('refuses local login off without single sign-on, naming the setting', async () => {
    expect(refusal(await load('console:\n  localLogin: false\n'))).toMatch(
      /console\.localLogin: local login can only be turned off when console\.oidc is set/,
    );
  });

  it('refuses a secret written inline, a missing secret file, and a mapping without groups', async () => {
    const inline = await load(
      `${OIDC.replace('clientSecretFile: secret.txt', 'clientSecret: inline-secret-text')}`,
    );
    const message = refusal(inline);
    expect(message).toContain('console.oidc.clientSecret: write the secret in a file');
    expect(message).not.toContain('inline-secret-text');
    expect(refusal(await load(OIDC))).toMatch(/console\.oidc\.clientSecretFile: cannot read/);
    const noGroups = await load(OIDC.replace('      admin: [treasury-admins]\n', '      admin: []\n'), {
      'secret.txt': 's',
    });
    expect(refusal(noGroups)).toContain('map at least one group to a role');
    const plain = await load(OIDC.replace('https://login.example.com', 'http://login.example.com'), {
      'secret.txt': 's',
    });
    expect(refusal(plain)).toContain('console.oidc.issuer: the issuer must be https');
  });
});

describe('names and roles from the provider’s claims', () => {
  const roles = oidcSchema.parse({
    issuer: 'https://login.example.com',
    clientId: 'c',
    clientSecret: 's',
    roles: { admin: ['admins'], operator: ['ops'], viewer: ['all'] },
  }).roles;

  it('gives the highest role of the person’s groups, from a list or one name, and none for other shapes', () => {
    expect(roleFromGroups(roles, ['all', 'ops'])).toBe('operator');
    expect(roleFromGroups(roles, ['ops', 'admins', 'all'])).toBe('admin');
    expect(roleFromGroups(roles, 'all')).toBe('viewer');
    expect(roleFromGroups(roles, ['marketing'])).toBeUndefined();
    expect(roleFromGroups(roles, { admins: true })).toBeUndefined();
    expect(roleFromGroups(roles, undefined)).toBeUndefined();
  });

  it('folds the e-mail’s local part, else preferred_username, to the person-name rule', () => {
    expect(personNameFrom({ email: 'José Silva+treasury@example.com' }, 's')).toBe('Jose-Silva-treasury');
    expect(personNameFrom({ preferred_username: 'maria.o' }, 's')).toBe('maria.o');
    expect(personNameFrom({ email: `${'a'.repeat(80)}@example.com` }, 's')).toBe('a'.repeat(64));
    expect(personNameFrom({ preferred_username: '日本' }, 'subject-1')).toMatch(/^sso-[0-9a-f]{12}$/);
  });
});
