/**
 * Single sign-on through the company's OpenID provider (`console.oidc`): the authorization code flow with
 * PKCE, `state` and `nonce`, all checked by openid-client. `/login/oidc` starts it; `/login/oidc/callback`
 * takes the provider's answer, maps the person's groups to a role and opens a session.
 *
 * What the start must remember (state, nonce, PKCE verifier) travels in a short-lived HttpOnly cookie of
 * this browser, signed with a key derived from the client secret: every replica can check it without a
 * table, and a callback reached from another browser has no cookie to match. The cookie is SameSite=Lax, as
 * the provider's redirect back is a navigation from another site, which a Strict cookie would not follow.
 *
 * Refusals at the callback count against the login throttle's per-address cap, like wrong passwords.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { html } from 'hono/html';
import * as openid from 'openid-client';
import { OIDC_ROLE_ORDER, type OidcSettings } from '../config/schema.js';
import { PERSON_NAME } from '../control/index.js';
import type { Role } from '../db/index.js';
import type { ConsoleContext } from './context.js';
import { page, sendPage } from './layout.js';
import type { LoginThrottle } from './login-throttle.js';
import { cookieOptions, LOGIN_CSRF_COOKIE, startSession } from './sessions.js';

export const OIDC_START_PATH = '/login/oidc';
export const OIDC_CALLBACK_PATH = '/login/oidc/callback';
const PENDING_COOKIE = 'tb_oidc_pending';
/** A sign-in at the provider taking longer than this starts again. */
const PENDING_LIFETIME_MS = 10 * 60_000;

/** What a started sign-in keeps until the provider answers. */
interface PendingSignIn {
  state: string;
  nonce: string;
  verifier: string;
  /** Epoch ms after which the cookie is refused whatever the browser kept. */
  expires: number;
}

/** The provider's name on the login page: its host, as people know it (login.example.com). */
export function providerName(settings: OidcSettings): string {
  return new URL(settings.issuer).host;
}

/**
 * The highest role whose groups meet the person's, or undefined. A claim may be a list of names or one
 * name; anything else gives no group.
 */
export function roleFromGroups(roles: OidcSettings['roles'], claim: unknown): Role | undefined {
  const groups = new Set(
    Array.isArray(claim)
      ? claim.filter((g) => typeof g === 'string')
      : typeof claim === 'string'
        ? [claim]
        : [],
  );
  for (const role of [...OIDC_ROLE_ORDER].reverse()) {
    if (roles[role].some((group) => groups.has(group))) return role;
  }
  return undefined;
}

/**
 * The accounts the provider gives a person (`accountsClaim`): null without the setting or for an admin
 * (every account), else the deployment's accounts the claim names, which may be none.
 */
export function accountsFromClaim(
  settings: Pick<OidcSettings, 'accountsClaim'>,
  role: Role,
  claim: unknown,
  known: Iterable<string>,
): readonly string[] | null {
  if (settings.accountsClaim === undefined || role === 'admin') return null;
  const named = new Set(
    Array.isArray(claim)
      ? claim.filter((name) => typeof name === 'string')
      : typeof claim === 'string'
        ? [claim]
        : [],
  );
  return [...known].filter((account) => named.has(account));
}

/**
 * The name of a person the provider introduces: the e-mail's local part, else preferred_username, folded
 * to the person-name rule (other characters become `-`, at most 64), else one made from the subject.
 */
export function personNameFrom(claims: Record<string, unknown>, subject: string): string {
  const email = typeof claims.email === 'string' ? claims.email : '';
  const candidates = [
    email.includes('@') ? email.slice(0, email.lastIndexOf('@')) : '',
    claims.preferred_username,
  ];
  for (const candidate of candidates) {
    if (typeof candidate !== 'string') continue;
    const folded = candidate
      .normalize('NFKD')
      .replace(/[\u0300-\u036f]/g, '')
      .replace(/[^A-Za-z0-9._@-]+/g, '-');
    const name = folded.replace(/^-+|-+$/g, '').slice(0, 64);
    if (PERSON_NAME.test(name)) return name;
  }
  return `sso-${createHash('sha256').update(subject).digest('hex').slice(0, 12)}`;
}

/** Whether the person's e-mail is in one of the allowed domains (always, when none are set). */
export function domainAllowed(settings: OidcSettings, claims: Record<string, unknown>): boolean {
  if (!settings.allowedDomains) return true;
  if (typeof claims.email !== 'string' || claims.email_verified === false) return false;
  const domain = claims.email.slice(claims.email.lastIndexOf('@') + 1).toLowerCase();
  return claims.email.includes('@') && settings.allowedDomains.includes(domain);
}

export function registerSingleSignOn(
  scope: FastifyInstance,
  context: ConsoleContext,
  settings: OidcSettings,
  throttle: LoginThrottle,
): void {
  const cookieKey = createHmac('sha256', settings.clientSecret)
    .update('treasury-bot sign-in cookie')
    .digest();
  const sign = (text: string) => createHmac('sha256', cookieKey).update(text).digest('base64url');
  // Read at the first sign-in, not at start: a provider that is down keeps nobody from local login or
  // the worker from starting. A failed read is tried again at the next sign-in.
  let discovered: Promise<openid.Configuration> | undefined;
  const configuration = () => {
    const issuer = new URL(settings.issuer);
    discovered ??= openid
      .discovery(
        issuer,
        settings.clientId,
        undefined,
        openid.ClientSecretBasic(settings.clientSecret),
        // Plain http is only let through the schema for a provider on this host (tests).
        issuer.protocol === 'http:' ? { execute: [openid.allowInsecureRequests] } : undefined,
      )
      .catch((error: unknown) => {
        discovered = undefined;
        throw error;
      });
    return discovered;
  };
  const callbackUrl = (request: FastifyRequest) =>
    new URL(OIDC_CALLBACK_PATH, `${request.protocol}://${request.headers.host}`);

  const show = (reply: FastifyReply, status: number, message: string) =>
    sendPage(
      reply,
      status,
      page({
        title: 'Single sign-on',
        session: null,
        body: html`<p class="error">${message}</p><p><a href="${OIDC_START_PATH}">Sign in again with ${providerName(settings)}</a></p>`,
      }),
    );

  scope.get(OIDC_START_PATH, { config: { requires: 'public' } }, async (request, reply) => {
    let config: openid.Configuration;
    try {
      config = await configuration();
    } catch (error) {
      context.logger.error({ err: error, issuer: settings.issuer }, 'the OpenID provider could not be read');
      return show(
        reply,
        502,
        `The identity provider ${providerName(settings)} could not be reached: try again.`,
      );
    }
    const pending: PendingSignIn = {
      state: openid.randomState(),
      nonce: openid.randomNonce(),
      verifier: openid.randomPKCECodeVerifier(),
      expires: context.clock().getTime() + PENDING_LIFETIME_MS,
    };
    const text = Buffer.from(JSON.stringify(pending)).toString('base64url');
    reply.setCookie(PENDING_COOKIE, `${text}.${sign(text)}`, {
      ...cookieOptions(request),
      sameSite: 'lax',
      path: OIDC_START_PATH,
      maxAge: PENDING_LIFETIME_MS / 1_000,
    });
    const target = openid.buildAuthorizationUrl(config, {
      redirect_uri: callbackUrl(request).href,
      scope: settings.scopes.join(' '),
      code_challenge: await openid.calculatePKCECodeChallenge(pending.verifier),
      code_challenge_method: 'S256',
      state: pending.state,
      nonce: pending.nonce,
    });
    return reply.redirect(target.href, 303);
  });

  scope.get(OIDC_CALLBACK_PATH, { config: { requires: 'public' } }, async (request, reply) => {
    const now = context.clock();
    const capped = throttle.addressRefusal(request.ip, now);
    if (capped) {
      context.metrics?.consoleLoginsRefused.inc({ reason: capped.reason });
      reply.header('retry-after', String(capped.retryAfterSeconds));
      return show(
        reply,
        429,
        `Too many refused sign-ins from this address: wait ${capped.retryAfterSeconds} seconds.`,
      );
    }
    const refuse = (
      status: number,
      reason: string,
      message: string,
      detail: Record<string, unknown> = {},
    ) => {
      throttle.failedFrom(request.ip, now);
      context.metrics?.consoleLoginsRefused.inc({ reason });
      context.logger.warn({ ...detail, address: request.ip, reason }, 'console sign-in refused');
      return show(reply, status, message);
    };
    const pending = readPending(request.cookies[PENDING_COOKIE], sign, now);
    reply.clearCookie(PENDING_COOKIE, { path: OIDC_START_PATH });
    if (!pending) {
      return refuse(
        401,
        'sso_no_pending',
        'No sign-in was started in this browser, or it took longer than 10 minutes: start again.',
      );
    }
    let claims: Record<string, unknown>;
    let subject: string;
    try {
      const config = await configuration();
      const currentUrl = new URL(request.url, callbackUrl(request));
      const tokens = await openid.authorizationCodeGrant(config, currentUrl, {
        pkceCodeVerifier: pending.verifier,
        expectedState: pending.state,
        expectedNonce: pending.nonce,
        idTokenExpected: true,
      });
      const idToken = tokens.claims();
      if (!idToken) throw new Error('the provider sent no ID token');
      subject = idToken.sub;
      claims = { ...idToken };
      // Many providers keep groups and e-mail out of the ID token: the userinfo answer, bound to the
      // same subject by openid-client, fills in what the ID token lacks.
      if (config.serverMetadata().userinfo_endpoint) {
        const userInfo = await openid.fetchUserInfo(config, tokens.access_token, subject);
        claims = { ...userInfo, ...idToken };
      }
    } catch (error) {
      // openid-client wraps the check that failed (oauth4webapi's, which names the parameter or claim, never
      // its value) in a general message: the wrapped one says what a person or an operator can act on.
      const { code, cause } = error as { code?: unknown; cause?: unknown };
      const reason = cause instanceof Error ? cause.message : (error as Error).message;
      return refuse(
        401,
        'sso_invalid_answer',
        `The answer of the identity provider did not check out (${reason}): nobody was signed in. Start again.`,
        { code, error: reason },
      );
    }
    const who = typeof claims.email === 'string' ? claims.email : subject;
    if (!domainAllowed(settings, claims)) {
      return refuse(
        403,
        'sso_domain',
        `${who} is not an address of a domain this console accepts: ask an administrator of the console.`,
        { subject },
      );
    }
    const role = roleFromGroups(settings.roles, claims[settings.roleClaim]);
    if (!role) {
      return refuse(
        403,
        'sso_no_role',
        `${who} signed in at ${providerName(settings)}, but none of their groups gives a role in this console, so nothing was opened or created. Ask your identity provider's administrator for a group of the console.`,
        { subject },
      );
    }
    const accounts = accountsFromClaim(
      settings,
      role,
      settings.accountsClaim === undefined ? undefined : claims[settings.accountsClaim],
      context.accounts.keys(),
    );
    if (accounts !== null && accounts.length === 0) {
      return refuse(
        403,
        'sso_no_account',
        `${who} signed in at ${providerName(settings)}, but their ${settings.accountsClaim} names none of this console's accounts, so nothing was opened or created. Ask your identity provider's administrator.`,
        { subject },
      );
    }
    const outcome = await context.store.ssoPeople.signIn({
      issuer: settings.issuer,
      subject,
      name: personNameFrom(claims, subject),
      role,
      accounts,
    });
    if (outcome.kind === 'disabled') {
      return refuse(403, 'sso_disabled', `${outcome.person.name} is disabled in this console.`, { subject });
    }
    if (outcome.kind === 'role_changed') {
      context.logger.info(
        { name: outcome.person.name, before: outcome.before, after: role, accounts },
        'role or accounts changed at the identity provider: the person’s other sessions ended',
      );
    }
    reply.clearCookie(LOGIN_CSRF_COOKIE, { path: '/' });
    await startSession(context.store, outcome.person, request, reply);
    // Not a redirect: this request came from the provider's site, and a browser does not send a SameSite=
    // Strict cookie (the session's) on a redirect that continues such a navigation. The page's own move to
    // the overview is a navigation of the console's site, which carries it.
    return sendPage(
      reply,
      200,
      page({
        title: 'Signed in',
        session: null,
        body: html`<meta http-equiv="refresh" content="0;url=/"><p>Signed in as ${outcome.person.name} (${outcome.person.role}).</p><p><a href="/">Continue to the overview</a></p>`,
      }),
    );
  });
}

/** The pending sign-in of the cookie, when its signature holds and it has not expired. */
function readPending(
  cookie: string | undefined,
  sign: (text: string) => string,
  now: Date,
): PendingSignIn | undefined {
  const [text, signature] = (cookie ?? '').split('.');
  if (!text || !signature) return undefined;
  const expected = Buffer.from(sign(text));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined;
  try {
    const pending = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as PendingSignIn;
    return pending.expires > now.getTime() ? pending : undefined;
  } catch {
    return undefined;
  }
}
