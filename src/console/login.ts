/**
 * The login: the form with its own CSRF cookie, and the check of a name and password under the throttle of
 * login-throttle.ts. A refused login is counted and logged, never written to the audit log (anyone can cause
 * one); a good one opens a session (sessions.ts), or goes on to the second factor (second-factor.ts).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { PERSON_NAME } from '../control/index.js';
import { loginPage } from './admin-pages.js';
import type { ConsoleContext } from './context.js';
import { page, sendPage } from './layout.js';
import { createLoginThrottle } from './login-throttle.js';
import { providerName, registerSingleSignOn } from './oidc.js';
import { DECOY_HASH, verifyPassword } from './passwords.js';
import { continueAfterPassword, registerSecondFactor } from './second-factor.js';
import { ConsoleRefusal, cookieOptions, LOGIN_CSRF_COOKIE, newToken, sameToken } from './sessions.js';

export function registerLogin(scope: FastifyInstance, context: ConsoleContext): void {
  const throttle = createLoginThrottle();
  const localLogin = context.localLogin !== false;
  const signOn = context.oidc ? { provider: providerName(context.oidc), localLogin } : undefined;
  if (context.oidc) registerSingleSignOn(scope, context, context.oidc, throttle);
  const showLogin = (
    request: FastifyRequest,
    reply: FastifyReply,
    status: number,
    message: string | null,
  ) => {
    const token = newToken();
    reply.setCookie(LOGIN_CSRF_COOKIE, token, cookieOptions(request));
    return sendPage(
      reply,
      status,
      page({ title: 'Log in', session: null, body: loginPage(token, message, signOn) }),
    );
  };
  scope.get('/login', { config: { requires: 'public' } }, async (request, reply) =>
    showLogin(request, reply, 200, null),
  );
  scope.post('/login', { config: { requires: 'public' } }, async (request, reply) => {
    if (!localLogin) {
      throw new ConsoleRefusal(
        403,
        `local passwords are off in this console: sign in with ${signOn?.provider ?? 'the identity provider'}`,
      );
    }
    const body = (request.body ?? {}) as Record<string, unknown>;
    const expected = request.cookies[LOGIN_CSRF_COOKIE];
    if (!expected || !sameToken(body._csrf, expected)) {
      throw new ConsoleRefusal(403, 'the login form was missing its CSRF token: reload the page');
    }
    const refuse = (reason: string, name: string | undefined) => {
      context.metrics?.consoleLoginsRefused.inc({ reason });
      context.logger.warn({ name, address: request.ip, reason }, 'console login refused');
    };
    const wrong = 'That name and password do not match an active person.';
    // The one person-name rule, before any lookup: a name that cannot exist is not worth a password check.
    const name = typeof body.name === 'string' ? body.name : '';
    if (!PERSON_NAME.test(name)) {
      refuse('name_invalid', undefined);
      return showLogin(request, reply, 401, wrong);
    }
    const now = context.clock();
    const admitted = throttle.admit(name, request.ip, now);
    if ('refusal' in admitted) {
      const { reason, retryAfterSeconds } = admitted.refusal;
      refuse(reason, name);
      reply.header('retry-after', String(retryAfterSeconds));
      const wait = `wait ${retryAfterSeconds} ${retryAfterSeconds === 1 ? 'second' : 'seconds'}`;
      return reason === 'busy'
        ? showLogin(
            request,
            reply,
            503,
            `Too many logins are being checked right now: ${wait} and try again.`,
          )
        : showLogin(request, reply, 429, `Too many wrong passwords: ${wait} and try again.`);
    }
    let person: Awaited<ReturnType<typeof context.store.people.findByName>>;
    let matches: boolean;
    try {
      person = await context.store.people.findByName(name);
      matches = await verifyPassword(
        typeof body.password === 'string' ? body.password : '',
        person?.passwordHash ?? DECOY_HASH,
      );
    } finally {
      admitted.release();
    }
    if (!person || !matches || person.disabledAt) {
      throttle.failed(name, request.ip, now);
      refuse('password', name);
      return showLogin(request, reply, 401, wrong);
    }
    reply.clearCookie(LOGIN_CSRF_COOKIE, { path: '/' });
    return continueAfterPassword(context, throttle, person, request, reply);
  });
  registerSecondFactor(scope, context, throttle);
}
