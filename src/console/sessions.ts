/**
 * Console sessions and the checks every request passes: the session cookie (HttpOnly, SameSite=Strict,
 * Secure over https), the idle timeout and the absolute lifetime, the CSRF token of every form, and the role
 * a route needs.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ConsoleSession, ConsoleStore, Person } from '../db/index.js';
import { allows, type Permission } from './permissions.js';

export const SESSION_COOKIE = 'tb_session';
/** The login form has no session yet: its token is a double-submit cookie of its own. */
export const LOGIN_CSRF_COOKIE = 'tb_login_csrf';
/** A session unused for this long is over (the overview's poll of /live is not use). */
export const IDLE_TIMEOUT_MS = 30 * 60_000;
/** A session is over this long after its login, however active: a stolen cookie does not last. */
export const SESSION_LIFETIME_MS = 12 * 3_600_000;
/** Writes of "last seen" are spared when the previous one is this recent. */
const TOUCH_EVERY_MS = 60_000;

declare module 'fastify' {
  interface FastifyRequest {
    consoleSession: ConsoleSession | null;
  }
}

export class ConsoleRefusal extends Error {
  override readonly name = 'ConsoleRefusal';
  constructor(
    readonly status: 401 | 403 | 421,
    message: string,
  ) {
    super(message);
  }
}

export const newToken = () => randomBytes(32).toString('base64url');
export const hashToken = (token: string) => createHash('sha256').update(token).digest('base64url');

export function sameToken(given: unknown, expected: string): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Secure when the person reached us over https (directly, or through a proxy that says so). */
export function cookieOptions(request: FastifyRequest) {
  const secure = request.protocol === 'https' || request.headers['x-forwarded-proto'] === 'https';
  return { path: '/', httpOnly: true, sameSite: 'strict' as const, secure };
}

export async function startSession(
  store: ConsoleStore,
  person: Person,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  const token = newToken();
  await store.people.openSession(person, hashToken(token), newToken());
  reply.setCookie(SESSION_COOKIE, token, cookieOptions(request));
}

/**
 * The live session of the request, or null; an idle one, or one past its lifetime, is treated as absent.
 * A request that a page makes by itself (`activity` false: the overview's poll) does not keep it alive.
 */
export async function loadSession(
  store: ConsoleStore,
  request: FastifyRequest,
  now: Date,
  activity = true,
): Promise<ConsoleSession | null> {
  const token = request.cookies[SESSION_COOKIE];
  if (!token) return null;
  const session = await store.people.findSession(hashToken(token));
  if (!session) return null;
  if (now.getTime() - session.createdAt.getTime() > SESSION_LIFETIME_MS) return null;
  const idleMs = now.getTime() - session.lastSeenAt.getTime();
  if (idleMs > IDLE_TIMEOUT_MS) return null;
  if (activity && idleMs > TOUCH_EVERY_MS) await store.people.touchSession(session.tokenHash);
  return session;
}

/** The session a route needs, with the permission; throws a refusal the error handler renders. */
export function requirePermission(request: FastifyRequest, permission: Permission): ConsoleSession {
  const session = request.consoleSession;
  if (!session) throw new ConsoleRefusal(401, 'log in first');
  if (!allows(session.person.role, permission)) {
    throw new ConsoleRefusal(403, `a ${session.person.role} may not do this (needs ${permission})`);
  }
  return session;
}

/** The session the route's access check let through (every route but the public ones has one). */
export function sessionOf(request: FastifyRequest): ConsoleSession {
  const session = request.consoleSession;
  if (!session) throw new ConsoleRefusal(401, 'log in first');
  return session;
}

/** Every form that changes something carries the session's token in `_csrf`. */
export function requireCsrf(request: FastifyRequest, session: ConsoleSession): void {
  const body = request.body as Record<string, unknown> | undefined;
  if (!sameToken(body?._csrf, session.csrfToken)) {
    throw new ConsoleRefusal(403, 'the form was missing its CSRF token or it did not match: reload the page');
  }
}
