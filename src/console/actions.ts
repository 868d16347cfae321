/**
 * Everything a person can change from the console, as one table: the path it posts to, the permission it
 * needs, and the audited store call it makes (four-eyes control's actions are a table of the same shape in
 * approval-actions.ts). The server checks the session, the permission and the CSRF token before any of them
 * runs, and each action reads its subject through the person's account scope first: a cycle, strategy,
 * order or envelope of an account they do not see is not found (404). The HTTP tests walk these tables for
 * every role and for a person limited to one account.
 */

import { PERSON_NAME, requireEveryAccount } from '../control/index.js';
import type { Cycle, Role, StrategyRecord } from '../db/index.js';
import { ROLES } from '../db/index.js';
import { resolveUnsureCycle } from '../engine/index.js';
import { requireVisible } from './accounts.js';
import { type ConsoleContext, ConsoleInputError, type ConsoleRequest, PageNotFound } from './context.js';
import { hashPassword, PasswordError } from './passwords.js';
import type { Permission } from './permissions.js';

export interface ConsoleAction {
  path: string;
  permission: Permission;
  run(
    context: ConsoleContext,
    request: ConsoleRequest,
    params: Record<string, string>,
    body: Record<string, unknown>,
  ): Promise<void>;
}

/** The cycle an action names, when the person sees its account. */
export async function visibleCycle(
  { database }: ConsoleContext,
  { scope }: ConsoleRequest,
  id: number,
): Promise<Cycle> {
  const cycle = await database.cycles.get(id);
  if (!cycle) throw new PageNotFound(`no cycle with id ${id}`);
  requireVisible(scope, cycle.account, `no cycle with id ${id}`);
  return cycle;
}

/** The strategy an action names, when the person sees its account. */
export async function visibleStrategy(
  { database }: ConsoleContext,
  { scope }: ConsoleRequest,
  name: string,
): Promise<StrategyRecord> {
  const missing = `no strategy named "${name}" was ever recorded`;
  const strategy = await database.strategies.get(name);
  if (!strategy) throw new PageNotFound(missing);
  requireVisible(scope, strategy.account, missing);
  return strategy;
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

/** The account of an order, named by the form beside its id (an id is unique only within its account). */
function accountFieldOf(body: Record<string, unknown>): string {
  const account = text(body, 'account');
  if (!/^[a-z0-9-]{1,64}$/.test(account)) {
    throw new ConsoleInputError(`account: "${account}" is not an account name (a-z, 0-9 and -)`);
  }
  return account;
}

/**
 * The accounts a new person is limited to (the form's `accounts` boxes); none ticked: every account. Each
 * must be one of the deployment's.
 */
function accountsOf(context: ConsoleContext, body: Record<string, unknown>): string[] | null {
  const given = body.accounts;
  const names = (Array.isArray(given) ? given : given === undefined ? [] : [given]).map(String);
  for (const name of names) {
    if (!context.accounts.has(name)) {
      throw new ConsoleInputError(
        `accounts: "${name}" is not an account of this deployment (${[...context.accounts.keys()].join(', ')})`,
      );
    }
  }
  return names.length === 0 ? null : names;
}

export const CONSOLE_ACTIONS: readonly ConsoleAction[] = [
  {
    path: '/kill-switch/pause',
    permission: 'operate',
    async run({ store }, { session, scope }, _params, body) {
      requireEveryAccount(scope, 'the kill switch');
      await store.actions.pauseAll(session.person.name, text(body, 'reason') || 'paused from the console');
    },
  },
  {
    path: '/kill-switch/resume',
    permission: 'operate',
    async run({ store }, { session, scope }) {
      requireEveryAccount(scope, 'the kill switch');
      await store.actions.resumeAll(session.person.name);
    },
  },
  {
    path: '/strategies/:name/pause',
    permission: 'operate',
    async run(context, request, params, body) {
      const strategy = await visibleStrategy(context, request, params.name ?? '');
      await context.store.actions.pauseStrategy(
        strategy.name,
        request.session.person.name,
        text(body, 'reason') || null,
      );
    },
  },
  {
    path: '/strategies/:name/resume',
    permission: 'operate',
    async run(context, request, params) {
      const strategy = await visibleStrategy(context, request, params.name ?? '');
      await context.store.actions.resumeStrategy(strategy.name, request.session.person.name);
    },
  },
  // The operator's decisions on an unsure cycle, as `treasury-bot resolve` takes them (the same operation).
  {
    path: '/cycles/:id/not-placed',
    permission: 'operate',
    async run(context, request, params) {
      const cycle = await visibleCycle(context, request, cycleIdOf(params.id));
      await resolveUnsureCycle(
        { database: context.database },
        cycle.id,
        { kind: 'not_placed' },
        request.session.person.name,
      );
    },
  },
  {
    path: '/cycles/:id/adopt',
    permission: 'operate',
    async run(context, request, params, body) {
      const cycle = await visibleCycle(context, request, cycleIdOf(params.id));
      const serviceOrderId = serviceOrderIdOf(text(body, 'order'));
      const client = context.accounts.get(cycle.account)?.client;
      if (!client) {
        throw new ConsoleInputError(
          `adopting an order reads it from the purchase service of account ${cycle.account}, and this console has none: use the console of \`treasury-bot run\`, or give the account its url and token for \`treasury-bot console\``,
        );
      }
      // The cycle's own account's service is the one asked, with its own token.
      await resolveUnsureCycle(
        { database: context.database, accounts: new Map([[cycle.account, { name: cycle.account, client }]]) },
        cycle.id,
        { kind: 'order', serviceOrderId },
        request.session.person.name,
      );
    },
  },
  {
    path: '/orders/:id/acknowledge',
    permission: 'operate',
    async run({ store }, { session, scope }, params, body) {
      const serviceOrderId = serviceOrderIdOf(params.id ?? '');
      const account = accountFieldOf(body);
      requireVisible(scope, account, `no order ${serviceOrderId} of account ${account} is recorded`);
      await store.actions.acknowledgeExternalOrder(
        { account, serviceOrderId },
        session.person.name,
        text(body, 'note') || null,
      );
    },
  },
  {
    path: '/users',
    permission: 'administer',
    async run(context, { session }, _params, body) {
      const name = personNameOf(text(body, 'name'));
      const role = text(body, 'role');
      if (!(ROLES as readonly string[]).includes(role)) throw new ConsoleInputError(`unknown role "${role}"`);
      const accounts = accountsOf(context, body);
      const password = typeof body.password === 'string' ? body.password : '';
      let passwordHash: string;
      try {
        passwordHash = await hashPassword(password);
      } catch (error) {
        if (error instanceof PasswordError) throw new ConsoleInputError(error.message);
        throw error;
      }
      await context.store.people.add(
        { name, role: role as Role, passwordHash, accounts },
        session.person.name,
      );
    },
  },
  {
    path: '/users/:name/disable',
    permission: 'administer',
    async run({ store }, { session }, params) {
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
