/**
 * The second factor of a password login: TOTP (RFC 6238: SHA-1, 6 digits, 30-second steps, as every
 * authenticator app reads an otpauth URI) and ten recovery codes.
 *
 * A login whose password was right but whose person has a second factor is half done: the browser gets a
 * cookie naming a row of `login_challenges`, which opens no session, so every route but the code form
 * treats it as no login at all. The code is checked under the login throttle (a wrong code counts exactly as
 * a wrong password, per name and per address), and the password's success does not clear the name's count:
 * only a finished login does, so knowing the password buys no extra guesses at the code. A code is accepted
 * for its own step or one step either side (clock drift), and once: the newest accepted step is stored and an
 * older or equal one is refused, across replicas.
 *
 * Recovery codes are 80 random bits each, so a fast SHA-256 is as safe to store as scrypt would be (nobody
 * can enumerate 2^80 candidates), and checking one costs no 128 MiB scrypt.
 *
 * An enrolment waits for its first accepted code (from the person's page, `user totp confirm`, or the first
 * login: a waiting enrolment already guards the login, so that one started from the command line takes
 * effect for the person at once, and its recovery codes work as well).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { html } from 'hono/html';
import { Secret, TOTP } from 'otpauth';
import QRCode from 'qrcode';
import { type ConsoleStore, type Person, SecondFactorError } from '../db/index.js';
import type { ConsoleContext } from './context.js';
import { csrfField, type Html, instant, page, sendPage } from './layout.js';
import type { LoginThrottle } from './login-throttle.js';
import {
  ConsoleRefusal,
  cookieOptions,
  hashToken,
  LOGIN_CSRF_COOKIE,
  newToken,
  requireCsrf,
  sameToken,
  sessionOf,
  startSession,
} from './sessions.js';

const ISSUER = 'treasury-bot';
const PERIOD_SECONDS = 30;
/** Steps either side of now a code may be for: a phone's clock a little off still works. */
const DRIFT_STEPS = 1;
export const RECOVERY_CODE_COUNT = 10;
/** How long the code form waits after the password before the password must be given again. */
export const CHALLENGE_LIFETIME_MS = 5 * 60_000;
/** The half-done login's cookie: a random token whose SHA-256 names the `login_challenges` row. */
export const SECOND_STEP_COOKIE = 'tb_login_second';

const totpOf = (name: string, secret: string) =>
  new TOTP({
    issuer: ISSUER,
    label: name,
    secret: Secret.fromBase32(secret),
    algorithm: 'SHA1',
    digits: 6,
    period: PERIOD_SECONDS,
  });

/** The time step a code is right for (now, or one step either side), or null. */
export function stepOfCode(name: string, secret: string, code: string, now: Date): number | null {
  if (!/^\d{6}$/.test(code)) return null;
  const totp = totpOf(name, secret);
  const delta = totp.validate({ token: code, timestamp: now.getTime(), window: DRIFT_STEPS });
  return delta === null ? null : totp.counter({ timestamp: now.getTime() }) + delta;
}

/** Recovery codes are typed by hand: case, spaces and dashes do not matter. */
const normalizedRecoveryCode = (code: string) => code.toUpperCase().replace(/[\s-]/g, '');
const hashRecoveryCode = (code: string) => hashToken(normalizedRecoveryCode(code));

/** 80 random bits as 16 base32 characters, in four groups. */
function newRecoveryCode(): string {
  return (new Secret({ size: 10 }).base32.match(/.{4}/g) ?? []).join('-');
}

export interface Enrolment {
  /** The otpauth URI: it carries the secret, so it is shown to the person and never logged. */
  uri: string;
  /** The secret alone, in groups of four, for typing into an app by hand. */
  key: string;
  recoveryCodes: string[];
}

/** A new secret and recovery codes for the person, stored waiting for the first code. */
export async function startEnrolment(store: ConsoleStore, person: Person, actor: string): Promise<Enrolment> {
  const secret = new Secret({ size: 20 }).base32;
  const recoveryCodes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
  await store.secondFactor.enrol(person, secret, recoveryCodes.map(hashRecoveryCode), actor);
  const key = (secret.match(/.{1,4}/g) ?? []).join(' ');
  return { uri: totpOf(person.name, secret).toString(), key, recoveryCodes };
}

/**
 * Whether `code` is the person's current TOTP code (not used before) or, unless `codeOnly`, one of their
 * unused recovery codes; an accepted one is used up. The first accepted TOTP code confirms a waiting
 * enrolment, recorded as `actor`.
 */
export async function acceptSecondFactor(
  store: ConsoleStore,
  person: Person,
  code: string,
  now: Date,
  options: { actor: string; codeOnly?: boolean },
): Promise<boolean> {
  const factor = await store.secondFactor.find(person);
  if (!factor) return false;
  const given = code.trim();
  const step = stepOfCode(person.name, factor.secret, given, now);
  if (step !== null) return store.secondFactor.acceptStep(person, step, options.actor);
  if (options.codeOnly || normalizedRecoveryCode(given).length !== 16) return false;
  return store.secondFactor.useRecoveryCode(person, hashRecoveryCode(given));
}

/**
 * After the right password: a session at once, or the code form (a person with a second factor), or the
 * enrolment (none, and console.requireTotp). The throttle's count for the name is cleared only with a session.
 */
export async function continueAfterPassword(
  context: ConsoleContext,
  throttle: LoginThrottle,
  person: Person,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const factor = await context.store.secondFactor.find(person);
  if (!factor && !context.requireTotp) {
    throttle.succeeded(person.name);
    await startSession(context.store, person, request, reply);
    return reply.redirect('/', 303);
  }
  const now = context.clock();
  const token = newToken();
  const expired = new Date(now.getTime() - CHALLENGE_LIFETIME_MS);
  await context.store.secondFactor.openChallenge(person, hashToken(token), expired);
  reply.setCookie(SECOND_STEP_COOKIE, token, cookieOptions(request));
  if (factor) return reply.redirect('/login/code', 303);
  const enrolment = await startEnrolment(context.store, person, person.name);
  const body = enrolmentBody(await qrOf(enrolment.uri), enrolment, {
    action: '/login/code',
    csrf: loginCsrf(request, reply),
    intro: 'This console requires a second factor. Set one up now to finish logging in.',
  });
  return sendPage(reply, 200, page({ title: 'Set up a second factor', session: null, body }));
}

export function registerSecondFactor(
  scope: FastifyInstance,
  context: ConsoleContext,
  throttle: LoginThrottle,
): void {
  const pendingPerson = async (request: FastifyRequest) => {
    const token = request.cookies[SECOND_STEP_COOKIE];
    if (!token) return null;
    const since = new Date(context.clock().getTime() - CHALLENGE_LIFETIME_MS);
    return context.store.secondFactor.findChallenge(hashToken(token), since);
  };
  const showCode = (request: FastifyRequest, reply: FastifyReply, status: number, message: string | null) =>
    sendPage(
      reply,
      status,
      page({ title: 'Second factor', session: null, body: codeForm(loginCsrf(request, reply), message) }),
    );

  // Public by design: without the cookie of a half-done login each sends the browser back to /login.
  scope.get('/login/code', { config: { requires: 'public' } }, async (request, reply) => {
    if (!(await pendingPerson(request))) return reply.redirect('/login', 303);
    return showCode(request, reply, 200, null);
  });

  scope.post('/login/code', { config: { requires: 'public' } }, async (request, reply) => {
    const body = (request.body ?? {}) as Record<string, unknown>;
    const expected = request.cookies[LOGIN_CSRF_COOKIE];
    if (!expected || !sameToken(body._csrf, expected)) {
      throw new ConsoleRefusal(403, 'the code form was missing its CSRF token: reload the page');
    }
    const person = await pendingPerson(request);
    if (!person) return reply.redirect('/login', 303);
    const refuse = (reason: string) => {
      context.metrics?.consoleLoginsRefused.inc({ reason });
      context.logger.warn({ name: person.name, address: request.ip, reason }, 'console login refused');
    };
    const now = context.clock();
    const admitted = throttle.admit(person.name, request.ip, now);
    if ('refusal' in admitted) {
      const { reason, retryAfterSeconds } = admitted.refusal;
      refuse(reason);
      reply.header('retry-after', String(retryAfterSeconds));
      const wait = `wait ${retryAfterSeconds} ${retryAfterSeconds === 1 ? 'second' : 'seconds'}`;
      return reason === 'busy'
        ? showCode(request, reply, 503, `Too many logins are being checked right now: ${wait} and try again.`)
        : showCode(request, reply, 429, `Too many wrong passwords or codes: ${wait} and try again.`);
    }
    let accepted: boolean;
    try {
      const code = typeof body.code === 'string' ? body.code : '';
      accepted = await acceptSecondFactor(context.store, person, code, now, { actor: person.name });
    } finally {
      admitted.release();
    }
    if (!accepted) {
      throttle.failed(person.name, request.ip, now);
      refuse('code');
      return showCode(request, reply, 401, 'That code is not right, or was already used.');
    }
    throttle.succeeded(person.name);
    await context.store.secondFactor.closeChallenge(hashToken(request.cookies[SECOND_STEP_COOKIE] ?? ''));
    reply.clearCookie(SECOND_STEP_COOKIE, { path: '/' });
    reply.clearCookie(LOGIN_CSRF_COOKIE, { path: '/' });
    await startSession(context.store, person, request, reply);
    return reply.redirect('/', 303);
  });

  scope.get('/account', { config: { requires: 'read' } }, async (request, reply) => {
    const session = sessionOf(request);
    const factor = await context.store.secondFactor.find(session.person);
    const setUp = html`<form method="post" action="/account/second-factor">${csrfField(session)}<button type="submit">${factor ? 'Start again with a new secret' : 'Set up a second factor'}</button></form>`;
    const status = !factor
      ? html`<p>No second factor: a password alone logs you in.</p>${setUp}`
      : factor.confirmedAt
        ? html`<p>Active since ${instant(factor.confirmedAt)}; ${factor.recoveryCodesLeft} recovery codes left. To replace it, an admin resets it (<code>treasury-bot user totp reset ${session.person.name}</code>).</p>`
        : html`<p>Set up ${instant(factor.enrolledAt)}, waiting for its first code: your next login asks for one.</p>${setUp}`;
    const body = html`<p>${session.person.name} (${session.person.role})</p><h2>Second factor</h2>${status}`;
    return sendPage(reply, 200, page({ title: 'Your account', session, body }));
  });

  scope.post('/account/second-factor', { config: { requires: 'read' } }, async (request, reply) => {
    const session = sessionOf(request);
    requireCsrf(request, session);
    let enrolment: Enrolment;
    try {
      enrolment = await startEnrolment(context.store, session.person, session.person.name);
    } catch (error) {
      if (!(error instanceof SecondFactorError)) throw error;
      const body = html`<p class="error">${error.message}</p><p><a href="/account">Back</a></p>`;
      return sendPage(reply, 409, page({ title: 'Refused', session, body }));
    }
    const body = enrolmentBody(await qrOf(enrolment.uri), enrolment, {
      action: '/account/second-factor/confirm',
      csrf: session.csrfToken,
      intro: 'Confirm with the first code your app shows; until then your next login asks for one.',
    });
    return sendPage(reply, 200, page({ title: 'Set up a second factor', session, body }));
  });

  scope.post('/account/second-factor/confirm', { config: { requires: 'read' } }, async (request, reply) => {
    const session = sessionOf(request);
    requireCsrf(request, session);
    const code = (request.body as Record<string, unknown>).code;
    const accepted = await acceptSecondFactor(
      context.store,
      session.person,
      typeof code === 'string' ? code : '',
      context.clock(),
      { actor: session.person.name, codeOnly: true },
    );
    if (accepted) return reply.redirect('/account', 303);
    const body = html`<p class="error">That code is not right, or was already used: wait for the next one.</p>${codeForm(session.csrfToken, null, '/account/second-factor/confirm')}`;
    return sendPage(reply, 400, page({ title: 'Set up a second factor', session, body }));
  });
}

/** The login forms' double-submit token, set anew with each form shown. */
function loginCsrf(request: FastifyRequest, reply: FastifyReply): string {
  const token = newToken();
  reply.setCookie(LOGIN_CSRF_COOKIE, token, cookieOptions(request));
  return token;
}

/** The QR code of an otpauth address, as an image for a page (the CSP allows `data:` images). */
const qrOf = (uri: string) => QRCode.toDataURL(uri, { errorCorrectionLevel: 'M', margin: 2, scale: 5 });

/** The same for a terminal: block characters with colour codes. */
export const terminalQr = (uri: string) => QRCode.toString(uri, { type: 'terminal', small: true });

function codeForm(csrf: string, message: string | null, action = '/login/code'): Html {
  return html`${message ? html`<p class="error">${message}</p>` : ''}
<form method="post" action="${action}">
<input type="hidden" name="_csrf" value="${csrf}">
<p><label>Code from your authenticator app, or a recovery code <input name="code" autocomplete="one-time-code" required autofocus></label></p>
<p><button type="submit">Continue</button></p>
</form>`;
}

function enrolmentBody(
  qr: string,
  enrolment: Enrolment,
  form: { action: string; csrf: string; intro: string },
): Html {
  return html`<p>${form.intro}</p>
<p>Scan this with an authenticator app, or type the key into it by hand (time-based, 6 digits).</p>
<p><img src="${qr}" alt="QR code of the otpauth address"></p>
<p>Key: <code>${enrolment.key}</code></p>
<pre>${enrolment.uri}</pre>
<h2>Recovery codes</h2>
<p>Each logs you in once without the app. They are shown only now: keep them somewhere safe.</p>
<pre>${enrolment.recoveryCodes.join('\n')}</pre>
${codeForm(form.csrf, null, form.action)}`;
}
