/**
 * The people who sign in through the company's identity provider (src/console/oidc.ts). Such a person is
 * known by the provider's issuer and subject, never by name: a rename at the provider finds the same person,
 * and a local person who happens to share the name is never taken over. The provider decides the role at
 * every sign-in; a change of role is written with its audit row and ends the person's sessions in the same
 * transaction, so a demoted person keeps no session opened with the higher role.
 */
import { and, eq, isNull } from 'drizzle-orm';
import type { DrizzleHandle } from '../connection.js';
import { consoleSessions, users } from '../schema.js';
import { appendAudit } from './audit.js';
import { type Person, type Role, toPerson } from './people.js';

export interface ProviderIdentity {
  issuer: string;
  subject: string;
  /** The name to give the person when they are new (already folded to the person-name rule). */
  name: string;
  role: Role;
  /** The accounts the provider gives (accountsClaim); null: every account. */
  accounts: readonly string[] | null;
}

export type SignInOutcome =
  | { kind: 'created'; person: Person }
  | { kind: 'known'; person: Person }
  /** The role or the accounts changed (`before` is the role before). */
  | { kind: 'role_changed'; person: Person; before: Role }
  | { kind: 'disabled'; person: Person };

export interface SsoPeopleRepository {
  /**
   * The person of this identity, created (audited, without a password) at their first sign-in, their role
   * set to the provider's. A disabled person stays disabled: the console's own decision outranks the
   * provider's.
   */
  signIn(identity: ProviderIdentity): Promise<SignInOutcome>;
}

/** Attempts at a free name when the provider's is taken by another person: `ana`, `ana.2`, … `ana.20`. */
const NAME_ATTEMPTS = 20;

export function createSsoPeopleRepository(db: DrizzleHandle, clock: () => Date): SsoPeopleRepository {
  return {
    async signIn({ issuer, subject, name, role, accounts }) {
      const kept = accounts === null ? null : [...accounts];
      const now = clock();
      // The provider, not a person of the console, decides these rows: the audit names it.
      const actor = `sso:${issuer}`;
      return db.transaction(async (transaction) => {
        const identified = async () =>
          (
            await transaction
              .select()
              .from(users)
              .where(and(eq(users.oidcIssuer, issuer), eq(users.oidcSubject, subject)))
              .for('update')
          )[0];
        const row = await identified();
        if (row) {
          const before = toPerson(row);
          if (before.disabledAt) return { kind: 'disabled', person: before };
          if (before.role === role && sameAccounts(before.accounts, kept))
            return { kind: 'known', person: before };
          const [changed] = await transaction
            .update(users)
            .set({ role, accounts: kept })
            .where(eq(users.id, row.id))
            .returning();
          const after = toPerson(changed ?? row);
          await transaction
            .update(consoleSessions)
            .set({ revokedAt: now })
            .where(and(eq(consoleSessions.userId, row.id), isNull(consoleSessions.revokedAt)));
          await appendAudit(
            transaction,
            { actor, action: 'user.role', subject: `user:${after.name}`, before, after },
            now,
          );
          return { kind: 'role_changed', person: after, before: before.role };
        }
        for (let attempt = 1; attempt <= NAME_ATTEMPTS; attempt++) {
          const candidate = attempt === 1 ? name : `${name.slice(0, 60)}.${attempt}`;
          const [created] = await transaction
            .insert(users)
            .values({
              name: candidate,
              role,
              accounts: kept,
              passwordHash: null,
              createdAt: now,
              oidcIssuer: issuer,
              oidcSubject: subject,
            })
            .onConflictDoNothing()
            .returning();
          if (!created) {
            // The same person's first sign-in from another tab or replica won the race: theirs is the row.
            const raced = await identified();
            if (raced) return { kind: 'known', person: toPerson(raced) };
            continue;
          }
          const person = toPerson(created);
          await appendAudit(
            transaction,
            {
              actor,
              action: 'user.add',
              subject: `user:${person.name}`,
              after: { ...person, source: 'sso', issuer, subject },
            },
            now,
          );
          return { kind: 'created', person };
        }
        throw new Error(`no free person name near "${name}" after ${NAME_ATTEMPTS} attempts`);
      });
    },
  };
}

function sameAccounts(a: readonly string[] | null, b: readonly string[] | null): boolean {
  if (a === null || b === null) return a === b;
  const sorted = [...b].sort();
  return a.length === b.length && [...a].sort().every((name, index) => name === sorted[index]);
}
