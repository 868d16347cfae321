/**
 * Everything a person can change from the console, as one table: the path it posts to, the permission it
 * needs, and the audited store call it makes (four-eyes control's actions are a table of the same shape in
 * approval-actions.ts). The server checks the session, the permission and the CSRF token before any of them
 * runs; the HTTP tests walk these tables for every role.
 */

import { PERSON_NAME } from '../control/index.js';
import type { ConsoleSession, Role } from '../db/index.js';
import { ROLES } from '../db/index.js';
import { resolveUnsureCycle } from '../engine/index.js';
import type { ConsoleContext } from './context.js';
import { hashPassword, PasswordError } from './passwords.js';
import type { Permission } from './permissions.js';

export class ConsoleInputError extends Error {
  override readonly name = 'ConsoleInputError';
}

export interface ConsoleAction {
  path: string;
  permission: Permission;
  run(
    context: ConsoleContext,
    session: ConsoleSession,
    params: Record<string, string>,
    body: Record<string, unknown>,
  ): Promise<void>;
}

const text = (body: Record<string, unknown>, field: string): string => {
  const value = body[field];
  return typeof value === 'string' ? value.trim().slice(0, 500) : '';
};

function cycleIdOf(text: string | undefined): number {
  if (!text || !/^[1-9]\d{0,14}$/.test(text)) throw new ConsoleInputError(`"${text}" is not a cycle id`);
  return Number(text);
}

/** The one person-name rule (src/control), as the login and the command line apply it. */
function personNameOf(name: string): string {
  if (!PERSON_NAME.test(name)) {
    throw new ConsoleInputError('a name is 1 to 64 letters, digits, dots, dashes, underscores or @');
  }
  return name;
}

/** The service's order ids are short tokens; anything else is a typo, refused before the service is asked. */
function serviceOrderIdOf(text: string): string {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(text)) {
    throw new ConsoleInputError(`order: "${text}" is not a service order id (letters, digits, - and _)`);
  }
  return text;
}

export const CONSOLE_ACTIONS: readonly ConsoleAction[] = [
  {
    path: '/kill-switch/pause',
    permission: 'operate',
    async run({ store }, session, _params, body) {
      await store.actions.pauseAll(session.person.name, text(body, 'reason') || 'paused from the console');
    },
  },
  {
    path: '/kill-switch/resume',
    permission: 'operate',
    async run({ store }, session) {
      await store.actions.resumeAll(session.person.name);
    },
  },
  {
    path: '/strategies/:name/pause',
    permission: 'operate',
    async run({ store }, session, params, body) {
      await store.actions.pauseStrategy(params.name ?? '', session.person.name, text(body, 'reason') || null);
    },
  },
  {
    path: '/strategies/:name/resume',
    permission: 'operate',
    async run({ store }, session, params) {
      await store.actions.resumeStrategy(params.name ?? '', session.person.name);
    },
  },
  // The operator's decisions on an unsure cycle, as `treasury-bot resolve` takes them (the same operation).
  {
    path: '/cycles/:id/not-placed',
    permission: 'operate',
    async run({ database }, session, params) {
      await resolveUnsureCycle(
        { database },
        cycleIdOf(params.id),
        { kind: 'not_placed' },
        session.person.name,
      );
    },
  },
  {
    path: '/cycles/:id/adopt',
    permission: 'operate',
    async run({ database, accounts }, session, params, body) {
      const cycleId = cycleIdOf(params.id);
      const serviceOrderId = serviceOrderIdOf(text(body, 'order'));
      if (accounts.size === 0) {
        throw new ConsoleInputError(
          'adopting an order reads it from the purchase service, and this console has none: use the console of `treasury-bot run`, or set TREASURY_API_URL and its token for `treasury-bot console`',
        );
      }
      await resolveUnsureCycle(
        { database, accounts },
        cycleId,
        { kind: 'order', serviceOrderId },
        session.person.name,
      );
    },
  },
  {
    path: '/orders/:id/acknowledge',
    permission: 'operate',
    async run({ store }, session, params, body) {
      const serviceOrderId = serviceOrderIdOf(params.id ?? '');
      await store.actions.acknowledgeExternalOrder(
        serviceOrderId,
        session.person.name,
        text(body, 'note') || null,
      );
    },
  },
  {
    path: '/users',
    permission: 'administer',
    async run({ store }, session, _params, body) {
      const name = personNameOf(text(body, 'name'));
      const role = text(body, 'role');
      if (!(ROLES as readonly string[]).includes(role)) throw new ConsoleInputError(`unknown role "${role}"`);
      const password = typeof body.password === 'string' ? body.password : '';
      let passwordHash: string;
      try {
        passwordHash = await hashPassword(password);
      } catch (error) {
        if (error instanceof PasswordError) throw new ConsoleInputError(error.message);
        throw error;
      }
      await store.people.add({ name, role: role as Role, passwordHash }, session.person.name);
    },
  },
  {
    path: '/users/:name/disable',
    permission: 'administer',
    async run({ store }, session, params) {
      await store.people.disable(personNameOf(params.name ?? ''), session.person.name);
    },
  },
];

/**
 * Where to go after an action: one of our own paths, never another host. A path that begins with two
 * slashes is a scheme-relative address to a browser (`//2130706433` is 127.0.0.1 as one number).
 */
export function safeBack(value: unknown): string {
  return typeof value === 'string' && /^\/(?!\/)[A-Za-z0-9/_-]*$/.test(value) ? value : '/';
}
