import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IDLE_TIMEOUT_MS, SESSION_COOKIE, SESSION_LIFETIME_MS } from '../../src/console/sessions.js';
import { ConsoleClient, loggedIn, type RunningConsole, startTestConsole } from './support.js';

/**
 * What keeps the console's sessions and forms safe, over real HTTP: CSRF tokens on every form (the login's
 * too), cookie flags, security headers, idle expiry, revocation by logout and by disabling a person, escaped
 * output. The login's throttling has a file of its own (login-throttle.test.ts).
 */
describe('console sessions and forms', () => {
  let console: RunningConsole;

  beforeAll(async () => {
    console = await startTestConsole();
  }, 60_000);

  afterAll(async () => {
    await console?.close();
  });

  it('sends a page to the login form without a session, and logs in with a session cookie', async () => {
    const client = new ConsoleClient(console.url);
    const first = await client.get('/');
    expect(first.status).toBe(303);
    expect(first.location).toBe('/login');
    const login = await client.login('viewer');
    expect(login.status).toBe(303);
    const cookie = login.headers.getSetCookie().find((line) => line.startsWith(`${SESSION_COOKIE}=`));
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    expect(cookie).not.toMatch(/Secure/);
    expect((await client.get('/')).status).toBe(200);
    const [row] = await console.store.audit.list({ limit: 1 });
    expect(row).toMatchObject({ actor: 'viewer', action: 'session.login' });
  });

  it('marks the cookie Secure when the person came over https', async () => {
    const token = await new ConsoleClient(console.url).csrfFrom('/login');
    const response = await fetch(`${console.url}/login`, {
      headers: { 'x-forwarded-proto': 'https' },
      redirect: 'manual',
    });
    expect(token).toBeTruthy();
    expect(response.headers.getSetCookie().join('\n')).toMatch(/; Secure/);
  });

  it('sends a content security policy without inline scripts, and the other security headers', async () => {
    const { headers } = await new ConsoleClient(console.url).get('/login');
    const policy = headers.get('content-security-policy') ?? '';
    expect(policy).toContain("script-src 'self'");
    expect(policy).toContain("frame-ancestors 'none'");
    expect(policy).not.toContain('unsafe-inline');
    expect(headers.get('x-content-type-options')).toBe('nosniff');
    expect(headers.get('x-frame-options')).toBe('SAMEORIGIN');
  });

  it('refuses a form without its CSRF token, or with another session’s, with 403 and changes nothing', async () => {
    const operator = await loggedIn(console, 'operator');
    const other = await loggedIn(console, 'operator');
    const missing = await operator.post('/kill-switch/pause', { reason: 'no token' });
    expect(missing.status).toBe(403);
    expect(missing.body).toContain('CSRF');
    const foreign = await operator.post('/kill-switch/pause', { _csrf: await other.csrfFrom('/') });
    expect(foreign.status).toBe(403);
    expect((await console.test.database.control.get()).paused).toBe(false);
    const loginWithout = await new ConsoleClient(console.url).post('/login', {
      name: 'admin',
      password: 'x',
    });
    expect(loginWithout.status).toBe(403);
  });

  it('refuses a wrong password (counted and logged: login-throttle.test.ts)', async () => {
    const answer = await new ConsoleClient(console.url).login('operator', 'not the password at all');
    expect(answer.status).toBe(401);
    expect(answer.body).toContain('do not match');
  });

  it('ends a session after the idle timeout', async () => {
    const client = await loggedIn(console, 'viewer');
    console.now.value = new Date(console.now.value.getTime() + IDLE_TIMEOUT_MS - 1_000);
    expect((await client.get('/')).status).toBe(200);
    console.now.value = new Date(console.now.value.getTime() + IDLE_TIMEOUT_MS + 1_000);
    expect((await client.get('/')).status).toBe(303);
  });

  it('revokes the session on logout: the old cookie no longer works', async () => {
    const client = await loggedIn(console, 'viewer');
    const stolen = client.cookie(SESSION_COOKIE)!;
    const out = await client.post('/logout', { _csrf: await client.csrfFrom('/') });
    expect(out.status).toBe(303);
    const replay = await fetch(`${console.url}/`, {
      headers: { cookie: `${SESSION_COOKIE}=${stolen}` },
      redirect: 'manual',
    });
    expect(replay.status).toBe(303);
  });

  it('revokes every session of a person who is disabled', async () => {
    const admin = await loggedIn(console, 'admin');
    const passwordHash = (await console.store.people.findByName('viewer'))!.passwordHash!;
    await console.store.people.add({ name: 'leaver', role: 'operator', passwordHash }, 'test');
    const leaver = await loggedIn(console, 'leaver');
    expect((await leaver.get('/')).status).toBe(200);
    const disabled = await admin.post('/users/leaver/disable', { _csrf: await admin.csrfFrom('/users') });
    expect(disabled.status).toBe(303);
    expect((await leaver.get('/')).status).toBe(303);
    expect((await new ConsoleClient(console.url).login('leaver')).status).toBe(401);
  });

  it('renders a name or reason carrying markup as text', async () => {
    const injected = '<script>alert("x")</script><img src=x onerror=alert(1)>';
    await console.test.database.strategies.upsertSeen([
      { name: injected, kind: 'dca', account: 'default', config: { name: injected }, hash: 'h' },
    ]);
    await console.test.database.strategies.halt(injected, `<b>halted</b>${injected}`);
    const viewer = await loggedIn(console, 'viewer');
    for (const path of ['/strategies', '/attention', '/']) {
      const { body } = await viewer.get(path);
      expect(body, path).not.toContain('<script>alert');
      expect(body, path).not.toContain('<img src=x');
    }
    const { body } = await viewer.get('/attention');
    expect(body).toContain('&lt;b&gt;halted&lt;/b&gt;&lt;script&gt;');
  });

  it('goes back only to a path of its own after an action, never to another host', async () => {
    const operator = await loggedIn(console, 'operator');
    for (const back of ['//2130706433', '//evil.example/x', '/\\evil.example']) {
      const answer = await operator.post('/kill-switch/resume', {
        _csrf: await operator.csrfFrom('/'),
        back,
      });
      expect(answer.status, back).toBe(303);
      expect(answer.location, back).toBe('/');
    }
    const own = await operator.post('/kill-switch/resume', {
      _csrf: await operator.csrfFrom('/'),
      back: '/strategies',
    });
    expect(own.location).toBe('/strategies');
  });

  it('asks browsers and proxies to store no page, report or download', async () => {
    const viewer = await loggedIn(console, 'viewer');
    for (const path of ['/', '/orders', '/orders.csv', '/live', '/login']) {
      expect((await viewer.get(path)).headers.get('cache-control'), path).toBe('no-store');
    }
  });

  it('does not count the overview’s poll of /live as activity: an unattended page ends its session', async () => {
    const client = await loggedIn(console, 'viewer');
    for (let minute = 5; minute <= 35; minute += 5) {
      console.now.value = new Date(console.now.value.getTime() + 5 * 60_000);
      const poll = await client.get('/live');
      if (minute * 60_000 <= IDLE_TIMEOUT_MS) expect(poll.status, `${minute} min`).toBe(200);
    }
    expect((await client.get('/')).status).toBe(303);
    // The page's next poll tells htmx to load the login form as a page.
    const poll = await fetch(`${console.url}/live`, {
      headers: { cookie: `${SESSION_COOKIE}=${client.cookie(SESSION_COOKIE)}`, 'hx-request': 'true' },
      redirect: 'manual',
    });
    expect(poll.status).toBe(401);
    expect(poll.headers.get('hx-redirect')).toBe('/login');
  });

  it('ends a session at its absolute lifetime, however active', async () => {
    const client = await loggedIn(console, 'viewer');
    const start = console.now.value.getTime();
    while (console.now.value.getTime() - start < SESSION_LIFETIME_MS - 20 * 60_000) {
      console.now.value = new Date(console.now.value.getTime() + 20 * 60_000);
      expect((await client.get('/strategies')).status).toBe(200);
    }
    console.now.value = new Date(start + SESSION_LIFETIME_MS + 1_000);
    expect((await client.get('/strategies')).status).toBe(303);
  });
});
