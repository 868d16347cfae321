import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LOGIN_FREE_FAILURES } from '../../src/console/login-throttle.js';
import { startEnrolment } from '../../src/console/second-factor.js';
import { listedRoutes } from '../../src/observability/http-server.js';
import {
  type Answer,
  ConsoleClient,
  loggedIn,
  PASSWORD,
  type RunningConsole,
  startTestConsole,
} from './support.js';

/**
 * The second factor over real HTTP: enrolling from one's own page, logging in with and without a code, the
 * half-done login that grants nothing, a replayed code, a wrong code counted by the login throttle, a
 * recovery code used once, console.requireTotp sending a person to enrol, and no secret in the log.
 */
const secretOf = (text: string) => {
  const secret = /secret=([A-Z2-7]+)/.exec(text)?.[1];
  if (!secret) throw new Error('no otpauth secret in the text');
  return secret;
};
const codeAt = (secret: string, at: Date) =>
  TOTP.generate({ secret: Secret.fromBase32(secret), timestamp: at.getTime() });
const recoveryCodesOf = (body: string) =>
  body.match(/\b[A-Z2-7]{4}-[A-Z2-7]{4}-[A-Z2-7]{4}-[A-Z2-7]{4}\b/g) ?? [];

/** The half-done login's code form, posted with its own CSRF token. */
async function postCode(client: ConsoleClient, code: string): Promise<Answer> {
  const csrf = await client.csrfFrom('/login/code');
  return client.post('/login/code', { _csrf: csrf, code });
}

/**
 * Every route of the console (as fastify lists them), asked by a browser that gave the password but not the
 * code: each answers as to nobody, 401 or the login form, but the public ones.
 */
async function expectNothingGranted(console: RunningConsole, client: ConsoleClient): Promise<void> {
  const csrf = /name="_csrf" value="([^"]+)"/.exec((await client.get('/login/code')).body)?.[1] ?? '';
  const routes = listedRoutes(console.server).filter(
    (route) => route.requires !== 'public' && route.method !== 'HEAD',
  );
  expect(routes.map((route) => `${route.method} ${route.url}`)).toEqual(
    expect.arrayContaining(['GET /', 'GET /account', 'POST /account/second-factor', 'POST /users']),
  );
  const answers: string[] = [];
  for (const route of routes) {
    const path = route.url.replace(/:[A-Za-z]+/g, '1');
    const answer = await client.request(
      route.method as 'GET' | 'POST',
      path,
      route.method === 'POST' ? { _csrf: csrf } : undefined,
    );
    const refused = answer.status === 401 || (answer.status === 303 && answer.location === '/login');
    if (!refused) answers.push(`${route.method} ${route.url} answered ${answer.status}`);
  }
  expect(answers).toEqual([]);
}

describe('the second factor of a password login', () => {
  let console: RunningConsole;
  let address = 0;
  const visitor = () => new ConsoleClient(console.url, { 'x-forwarded-for': `203.0.113.${++address}` });
  const later = (ms: number) => {
    console.now.value = new Date(console.now.value.getTime() + ms);
  };
  const person = async (name: string) => {
    const found = await console.store.people.findByName(name);
    if (!found) throw new Error(`no ${name}`);
    return found;
  };
  const secrets: string[] = [];
  const shownCodes: string[] = [];

  beforeAll(async () => {
    console = await startTestConsole();
  }, 60_000);
  afterAll(async () => {
    await console?.close();
  });
  beforeEach(() => {
    // Past every delay and half-done login the previous test left.
    later(24 * 3_600_000);
  });

  it('enrols from the person’s own page: a QR code and recovery codes once, active after the first code', async () => {
    const operator = await loggedIn(console, 'operator');
    expect((await operator.get('/account')).body).toContain('No second factor');
    const csrf = await operator.csrfFrom('/account');
    const enrol = await operator.post('/account/second-factor', { _csrf: csrf });
    expect(enrol.status).toBe(200);
    expect(enrol.body).toMatch(/<img src="data:image\/png;base64,[A-Za-z0-9+/=]+"/);
    expect(enrol.body).toContain('otpauth://totp/treasury-bot:operator?');
    const secret = secretOf(enrol.body);
    secrets.push(secret);
    const codes = recoveryCodesOf(enrol.body);
    expect(codes).toHaveLength(10);
    shownCodes.push(...codes);
    expect((await operator.get('/account')).body).toContain('waiting for its first code');

    const wrong = await operator.post('/account/second-factor/confirm', { _csrf: csrf, code: '000000' });
    expect(wrong.status).toBe(400);
    const confirm = await operator.post('/account/second-factor/confirm', {
      _csrf: csrf,
      code: codeAt(secret, console.now.value),
    });
    expect(confirm).toMatchObject({ status: 303, location: '/account' });
    const page = (await operator.get('/account')).body;
    expect(page).toContain('Active since');
    expect(page).not.toContain(secret);
    // Active: starting again is refused until an admin resets it.
    expect((await operator.post('/account/second-factor', { _csrf: csrf })).status).toBe(409);

    const audit = await console.store.audit.list({ limit: 100 });
    expect(audit.filter((row) => row.subject === 'user:operator').map((row) => row.action)).toEqual(
      expect.arrayContaining(['user.totp_enrol', 'user.totp_confirm']),
    );
    expect(JSON.stringify(audit)).not.toContain(secret);
  });

  it('logs a person without a second factor in with the password alone', async () => {
    const answer = await visitor().login('viewer');
    expect(answer).toMatchObject({ status: 303, location: '/' });
  });

  it('asks for the code after the password; the half-done login grants nothing; a code is accepted once', async () => {
    const [secret] = secrets;
    const browser = visitor();
    const password = await browser.login('operator');
    expect(password).toMatchObject({ status: 303, location: '/login/code' });
    expect(browser.cookie('tb_session')).toBeUndefined();
    await expectNothingGranted(console, browser);

    const code = codeAt(secret!, console.now.value);
    expect((await postCode(browser, code)).status).toBe(303);
    expect((await browser.get('/')).status).toBe(200);

    // The same code again, in the same 30 seconds, from another browser with the password: refused.
    const replay = visitor();
    await replay.login('operator');
    const refused = await postCode(replay, code);
    expect(refused.status).toBe(401);
    expect(refused.body).toContain('already used');
    expect(replay.cookie('tb_session')).toBeUndefined();
    // One step of drift either side: the code of the previous step is older than the one used, the next one is fine.
    expect(
      (await postCode(replay, codeAt(secret!, new Date(console.now.value.getTime() - 30_000)))).status,
    ).toBe(401);
    expect(
      (await postCode(replay, codeAt(secret!, new Date(console.now.value.getTime() + 30_000)))).status,
    ).toBe(303);
  });

  it('counts wrong codes as the login throttle counts wrong passwords: the delay kicks in, the right code waits', async () => {
    const [secret] = secrets;
    const codeRefusals = async () =>
      (await console.metrics.consoleLoginsRefused.get()).values.find(
        (value) => value.labels.reason === 'code',
      )?.value ?? 0;
    const before = await codeRefusals();
    const browser = visitor();
    await browser.login('operator');
    const statuses: number[] = [];
    for (let guess = 0; guess < LOGIN_FREE_FAILURES + 1; guess++) {
      // The right password given again in between: it does not clear the name's count, only a finished login does.
      if (guess === LOGIN_FREE_FAILURES - 1)
        expect((await browser.login('operator')).location).toBe('/login/code');
      statuses.push((await postCode(browser, guess === 0 ? '12345' : '000000')).status);
    }
    expect(statuses).toEqual([...Array(LOGIN_FREE_FAILURES).fill(401), 429]);
    // The right code waits too, and so does the password.
    const early = await postCode(browser, codeAt(secret!, console.now.value));
    expect(early.status).toBe(429);
    expect(early.headers.get('retry-after')).toBe('1');
    expect((await visitor().login('operator')).status).toBe(429);
    later(1_000);
    expect((await postCode(browser, codeAt(secret!, console.now.value))).status).toBe(303);
    expect((await codeRefusals()) - before).toBe(LOGIN_FREE_FAILURES);
  });

  it('takes a recovery code once', async () => {
    const [code] = shownCodes;
    const first = visitor();
    await first.login('operator');
    expect((await postCode(first, code!.toLowerCase())).status).toBe(303);
    const second = visitor();
    await second.login('operator');
    expect((await postCode(second, code!)).status).toBe(401);
    const audit = await console.store.audit.list({ limit: 100 });
    expect(audit.find((row) => row.action === 'user.totp_recovery_code')).toMatchObject({
      actor: 'operator',
      after: { recoveryCodesLeft: 9 },
    });
    expect((await (await loggedInWithCode(console, 'operator', secrets[0]!)).get('/account')).body).toContain(
      '9 recovery codes left',
    );
  });

  it('asks an enrolment started elsewhere (the command line) for its code at the next login, which confirms it', async () => {
    const enrolment = await startEnrolment(console.store, await person('approver'), 'test-setup');
    const browser = visitor();
    expect((await browser.login('approver')).location).toBe('/login/code');
    expect((await postCode(browser, codeAt(secretOf(enrolment.uri), console.now.value))).status).toBe(303);
    expect((await console.store.secondFactor.find(await person('approver')))?.confirmedAt).not.toBeNull();
    await console.store.secondFactor.reset(await person('approver'), 'admin');
    expect((await visitor().login('approver')).location).toBe('/');
  });

  it('forgets a half-done login after five minutes', async () => {
    const browser = visitor();
    await browser.login('operator');
    later(5 * 60_000 + 1_000);
    expect((await browser.get('/login/code')).location).toBe('/login');
  });

  it('never writes a secret or a recovery code to the log', () => {
    const log = console.logLines.join('');
    expect(log).toContain('console login refused');
    for (const text of [...secrets, ...shownCodes]) expect(log).not.toContain(text);
  });
});

async function loggedInWithCode(console: RunningConsole, name: string, secret: string) {
  console.now.value = new Date(console.now.value.getTime() + 60_000);
  const client = new ConsoleClient(console.url, { 'x-forwarded-for': '192.0.2.1' });
  await client.login(name);
  const answer = await postCode(client, codeAt(secret, console.now.value));
  if (answer.status !== 303) throw new Error(`the code of ${name} answered ${answer.status}`);
  return client;
}

describe('console.requireTotp', () => {
  let console: RunningConsole;

  beforeAll(async () => {
    console = await startTestConsole({ requireTotp: true });
  }, 60_000);
  afterAll(async () => {
    await console?.close();
  });

  it('sends a person without a second factor to enrol right after the password, before any page', async () => {
    const browser = new ConsoleClient(console.url);
    const token = await browser.csrfFrom('/login');
    const enrol = await browser.post('/login', { _csrf: token, name: 'viewer', password: PASSWORD });
    expect(enrol.status).toBe(200);
    expect(enrol.body).toContain('requires a second factor');
    expect(recoveryCodesOf(enrol.body)).toHaveLength(10);
    await expectNothingGranted(console, browser);
    const secret = secretOf(enrol.body);
    expect((await postCode(browser, codeAt(secret, console.now.value))).status).toBe(303);
    expect((await browser.get('/')).status).toBe(200);
    expect((await browser.get('/account')).body).toContain('Active since');
    // The next login asks for a code, not for a new enrolment.
    console.now.value = new Date(console.now.value.getTime() + 60_000);
    expect((await new ConsoleClient(console.url).login('viewer')).location).toBe('/login/code');
    expect(console.logLines.join('')).not.toContain(secret);
  });

  it('takes the first code on the enrolment page’s own form, as a browser submits it', async () => {
    const browser = new ConsoleClient(console.url);
    const token = await browser.csrfFrom('/login');
    const enrol = await browser.post('/login', { _csrf: token, name: 'operator', password: PASSWORD });
    const csrf = /name="_csrf" value="([^"]+)"/.exec(enrol.body)?.[1] ?? '';
    const code = codeAt(secretOf(enrol.body), console.now.value);
    expect(await browser.post('/login/code', { _csrf: csrf, code })).toMatchObject({
      status: 303,
      location: '/',
    });
    expect((await browser.get('/')).status).toBe(200);
  });
});
