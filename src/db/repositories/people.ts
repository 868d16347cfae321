/**
 * The people of the web console and their sessions. Every change a person makes to people, and every
 * login and logout, is written with its audit row in one transaction. A refused login is not: anyone can
 * cause one, so it is counted and logged (src/console/server.ts) rather than stored per attempt. Passwords arrive already hashed
 * (src/console/passwords.ts); session tokens arrive as their SHA-256, never as the cookie's value.
 */
import { and, asc, eq, isNull } from 'drizzle-orm';
import type { DrizzleHandle } from '../connection.js';
import { consoleSessions, users } from '../schema.js';
import { reopenUncountedApprovals } from './approvals.js';
import { appendAudit } from './audit.js';

export const ROLES = ['viewer', 'operator', 'approver', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/**
 * The roles that hold the approve permission (src/console/permissions.ts grants it to the same ones, and
 * test/control/approvals.test.ts keeps the two the same): only their enabled people count as approvers.
 */
export const APPROVER_ROLES: readonly Role[] = ['approver', 'admin'];

/** The worker's name in the records (src/engine/strategy-versions.ts AUTOMATION): never a person's. */
export const RESERVED_NAME = 'automation';

/** A person's name as stored and compared: names are case-insensitive (migration 0012 folded them). */
export function foldedName(name: string): string {
  return name.toLowerCase();
}

export interface Person {
  id: number;
  name: string;
  role: Role;
  createdAt: Date;
  disabledAt: Date | null;
  /** The accounts whose rows the person sees and acts on; null: every account (always so for an admin). */
  accounts: readonly string[] | null;
}

export interface PersonWithSecret extends Person {
  /** Null for a person of single sign-on: no password of theirs can match. */
  passwordHash: string | null;
}

export interface ConsoleSession {
  tokenHash: string;
  csrfToken: string;
  /** The login: the session's absolute lifetime runs from here. */
  createdAt: Date;
  lastSeenAt: Date;
  person: Person;
}

export class PeopleError extends Error {
  override readonly name = 'PeopleError';
  constructor(
    readonly code:
      | 'USER_EXISTS'
      | 'USER_NOT_FOUND'
      | 'USER_NAME_RESERVED'
      | 'USER_SIGNS_IN_WITH_SSO'
      | 'USER_ADMIN_LIMITED',
    message: string,
  ) {
    super(message);
  }
}

export interface NewPerson {
  name: string;
  role: Role;
  passwordHash: string;
  /**
   * Limits the person to these accounts (names the caller checked against the settings); absent or null:
   * every account. Refused for an admin, who administers every account's people and settings.
   */
  accounts?: readonly string[] | null;
}

export interface PeopleRepository {
  add(input: NewPerson, actor: string): Promise<Person>;
  list(): Promise<Person[]>;
  /** With the hash, for checking a login; disabled people are returned too (the caller refuses them). */
  findByName(name: string): Promise<PersonWithSecret | null>;
  /** Disables the person and revokes every session of theirs. */
  disable(name: string, actor: string): Promise<Person>;
  /** Sets a new hash and revokes every session of the person. */
  setPassword(name: string, passwordHash: string, actor: string): Promise<Person>;
  openSession(person: Person, tokenHash: string, csrfToken: string): Promise<void>;
  /** A live session (not revoked, person not disabled); idle expiry and lifetime are the caller's rules. */
  findSession(tokenHash: string): Promise<ConsoleSession | null>;
  touchSession(tokenHash: string): Promise<void>;
  closeSession(session: ConsoleSession): Promise<void>;
}

type UserRow = typeof users.$inferSelect;

export function toPerson(row: UserRow): Person {
  return {
    id: row.id,
    name: row.name,
    role: row.role as Role,
    createdAt: row.createdAt,
    disabledAt: row.disabledAt,
    accounts: row.accounts,
  };
}

export function createPeopleRepository(db: DrizzleHandle, clock: () => Date): PeopleRepository {
  const existing = async (name: string): Promise<UserRow> => {
    const [row] = await db
      .select()
      .from(users)
      .where(eq(users.name, foldedName(name)));
    if (!row) throw new PeopleError('USER_NOT_FOUND', `no console user named "${name}"`);
    return row;
  };

  /** Changes one person and revokes their sessions, with the audit row, in one transaction. */
  const change = async (
    name: string,
    set: Partial<typeof users.$inferInsert>,
    actor: string,
    action: 'user.disable' | 'user.password',
  ): Promise<Person> => {
    const before = toPerson(await existing(name));
    const now = clock();
    return db.transaction(async (transaction) => {
      const [row] = await transaction.update(users).set(set).where(eq(users.id, before.id)).returning();
      if (!row) throw new PeopleError('USER_NOT_FOUND', `no console user named "${name}"`);
      await transaction
        .update(consoleSessions)
        .set({ revokedAt: now })
        .where(and(eq(consoleSessions.userId, row.id), isNull(consoleSessions.revokedAt)));
      const after = toPerson(row);
      await appendAudit(transaction, { actor, action, subject: `user:${row.name}`, before, after }, now);
      // A disabled person's approvals stop counting for what is not bought yet, in the same transaction.
      if (action === 'user.disable') await reopenUncountedApprovals(transaction, row.name, actor, now);
      return after;
    });
  };

  return {
    async add({ name: given, role, passwordHash, accounts = null }, actor) {
      const name = foldedName(given);
      if (name === RESERVED_NAME) {
        throw new PeopleError(
          'USER_NAME_RESERVED',
          `"${given}" is the worker's own name in the records (it never approves): choose another name`,
        );
      }
      if (role === 'admin' && accounts !== null) {
        throw new PeopleError(
          'USER_ADMIN_LIMITED',
          `an admin sees every account: give ${given} another role to limit them to ${accounts.join(', ')}`,
        );
      }
      const now = clock();
      return db.transaction(async (transaction) => {
        const [row] = await transaction
          .insert(users)
          .values({ name, role, passwordHash, createdAt: now, accounts: accounts && [...new Set(accounts)] })
          .onConflictDoNothing()
          .returning();
        if (!row) throw new PeopleError('USER_EXISTS', `a console user named "${name}" already exists`);
        const after = toPerson(row);
        await appendAudit(transaction, { actor, action: 'user.add', subject: `user:${name}`, after }, now);
        return after;
      });
    },

    async list() {
      return (await db.select().from(users).orderBy(asc(users.name))).map(toPerson);
    },

    async findByName(name) {
      const [row] = await db
        .select()
        .from(users)
        .where(eq(users.name, foldedName(name)));
      return row ? { ...toPerson(row), passwordHash: row.passwordHash } : null;
    },

    disable: (name, actor) => change(name, { disabledAt: clock() }, actor, 'user.disable'),

    async setPassword(name, passwordHash, actor) {
      // A person of single sign-on is admitted by the company's provider; a local password would let them in
      // past it (after the provider disabled or demoted them).
      if ((await existing(name)).oidcIssuer !== null) {
        throw new PeopleError(
          'USER_SIGNS_IN_WITH_SSO',
          `"${foldedName(name)}" signs in through single sign-on: a local password would bypass the identity provider`,
        );
      }
      return change(name, { passwordHash }, actor, 'user.password');
    },

    async openSession(person, tokenHash, csrfToken) {
      const now = clock();
      await db.transaction(async (transaction) => {
        await transaction
          .insert(consoleSessions)
          .values({ tokenHash, userId: person.id, csrfToken, createdAt: now, lastSeenAt: now });
        await appendAudit(
          transaction,
          { actor: person.name, action: 'session.login', subject: `user:${person.name}` },
          now,
        );
      });
    },

    async findSession(tokenHash) {
      const [row] = await db
        .select()
        .from(consoleSessions)
        .innerJoin(users, eq(users.id, consoleSessions.userId))
        .where(
          and(
            eq(consoleSessions.tokenHash, tokenHash),
            isNull(consoleSessions.revokedAt),
            isNull(users.disabledAt),
          ),
        );
      if (!row) return null;
      const session = row.console_sessions;
      return {
        tokenHash: session.tokenHash,
        csrfToken: session.csrfToken,
        createdAt: session.createdAt,
        lastSeenAt: session.lastSeenAt,
        person: toPerson(row.users),
      };
    },

    async touchSession(tokenHash) {
      await db
        .update(consoleSessions)
        .set({ lastSeenAt: clock() })
        .where(eq(consoleSessions.tokenHash, tokenHash));
    },

    async closeSession(session) {
      const now = clock();
      await db.transaction(async (transaction) => {
        await transaction
          .update(consoleSessions)
          .set({ revokedAt: now })
          .where(eq(consoleSessions.tokenHash, session.tokenHash));
        const { name } = session.person;
        await appendAudit(
          transaction,
          { actor: name, action: 'session.logout', subject: `user:${name}` },
          now,
        );
      });
    },
  };
}
