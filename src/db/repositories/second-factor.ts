/**
 * People's second factor (TOTP) as stored: the enrolment, its recovery codes, the newest time step a code
 * was accepted for, and the half-done logins waiting for a code. The checks that need the secret (which
 * code is right) are the console's (src/console/second-factor.ts); this repository makes each use of a
 * code a single conditional write, so that two replicas cannot both accept the same code or recovery code.
 * Every enrolment, confirmation, reset and use of a recovery code is written with its audit row in one
 * transaction; the secret and the codes never go into the audit log.
 */
import { and, count, eq, gte, isNull, lt, or } from 'drizzle-orm';
import type { DrizzleExecutor, DrizzleHandle } from '../connection.js';
import { loginChallenges, recoveryCodes, secondFactors, users } from '../schema.js';
import { appendAudit } from './audit.js';
import { type Person, toPerson } from './people.js';

export interface SecondFactor {
  /** Base32, as the authenticator app takes it. */
  secret: string;
  enrolledAt: Date;
  /** Null while the enrolment waits for its first accepted code. */
  confirmedAt: Date | null;
  /** The newest time step a code was accepted for. */
  lastStep: number | null;
  recoveryCodesLeft: number;
}

export class SecondFactorError extends Error {
  override readonly name = 'SecondFactorError';
  constructor(
    readonly code: 'TOTP_ACTIVE' | 'TOTP_NOT_ENROLLED',
    message: string,
  ) {
    super(message);
  }
}

export interface SecondFactorRepository {
  find(person: Person): Promise<SecondFactor | null>;
  /**
   * Starts an enrolment, or replaces one still waiting for its first code, with the hashes of its recovery
   * codes. A confirmed one is refused (TOTP_ACTIVE): it is reset first, by an admin.
   */
  enrol(person: Person, secret: string, recoveryCodeHashes: readonly string[], actor: string): Promise<void>;
  /**
   * Records a code accepted for `step`, unless a code of that step or a later one was (a replay): false
   * then. The first accepted code confirms a waiting enrolment (audited as `actor`).
   */
  acceptStep(person: Person, step: number, actor: string): Promise<boolean>;
  /** Marks a recovery code used; false when it is not one of the person's unused codes. */
  useRecoveryCode(person: Person, codeHash: string): Promise<boolean>;
  /** Removes the person's second factor and its recovery codes (TOTP_NOT_ENROLLED when there is none). */
  reset(person: Person, actor: string): Promise<void>;
  /** Opens a half-done login; those opened before `expiredBefore` are forgotten. */
  openChallenge(person: Person, tokenHash: string, expiredBefore: Date): Promise<void>;
  /** The (enabled) person of a half-done login opened at or after `since`; null when there is none. */
  findChallenge(tokenHash: string, since: Date): Promise<Person | null>;
  closeChallenge(tokenHash: string): Promise<void>;
}

export function createSecondFactorRepository(db: DrizzleHandle, clock: () => Date): SecondFactorRepository {
  const subject = (person: Person) => `user:${person.name}`;
  const codesLeft = async (executor: DrizzleExecutor, userId: number) => {
    const [row] = await executor
      .select({ left: count() })
      .from(recoveryCodes)
      .where(and(eq(recoveryCodes.userId, userId), isNull(recoveryCodes.usedAt)));
    return Number(row?.left ?? 0);
  };

  return {
    async find(person) {
      const [row] = await db.select().from(secondFactors).where(eq(secondFactors.userId, person.id));
      if (!row) return null;
      return {
        secret: row.secret,
        enrolledAt: row.enrolledAt,
        confirmedAt: row.confirmedAt,
        lastStep: row.lastStep,
        recoveryCodesLeft: await codesLeft(db, person.id),
      };
    },

    async enrol(person, secret, recoveryCodeHashes, actor) {
      const now = clock();
      await db.transaction(async (transaction) => {
        // Replaces a waiting enrolment only: the conditional update leaves a confirmed one alone.
        const [replaced] = await transaction
          .insert(secondFactors)
          .values({ userId: person.id, secret, enrolledAt: now })
          .onConflictDoUpdate({
            target: secondFactors.userId,
            set: { secret, enrolledAt: now, lastStep: null },
            setWhere: isNull(secondFactors.confirmedAt),
          })
          .returning({ userId: secondFactors.userId });
        if (!replaced) {
          throw new SecondFactorError(
            'TOTP_ACTIVE',
            `${person.name} already has an active second factor: reset it first (user totp reset ${person.name})`,
          );
        }
        await transaction.delete(recoveryCodes).where(eq(recoveryCodes.userId, person.id));
        if (recoveryCodeHashes.length > 0) {
          await transaction
            .insert(recoveryCodes)
            .values(recoveryCodeHashes.map((codeHash) => ({ userId: person.id, codeHash })));
        }
        await appendAudit(
          transaction,
          {
            actor,
            action: 'user.totp_enrol',
            subject: subject(person),
            after: { confirmed: false, recoveryCodes: recoveryCodeHashes.length },
          },
          now,
        );
      });
    },

    async acceptStep(person, step, actor) {
      const now = clock();
      return db.transaction(async (transaction) => {
        const [before] = await transaction
          .select({ confirmedAt: secondFactors.confirmedAt })
          .from(secondFactors)
          .where(eq(secondFactors.userId, person.id))
          .for('update');
        if (!before) return false;
        const [row] = await transaction
          .update(secondFactors)
          .set({ lastStep: step, confirmedAt: before.confirmedAt ?? now })
          .where(
            and(
              eq(secondFactors.userId, person.id),
              or(isNull(secondFactors.lastStep), lt(secondFactors.lastStep, step)),
            ),
          )
          .returning({ userId: secondFactors.userId });
        if (!row) return false;
        if (!before.confirmedAt) {
          await appendAudit(
            transaction,
            { actor, action: 'user.totp_confirm', subject: subject(person), after: { confirmed: true } },
            now,
          );
        }
        return true;
      });
    },

    async useRecoveryCode(person, codeHash) {
      const now = clock();
      return db.transaction(async (transaction) => {
        const [row] = await transaction
          .update(recoveryCodes)
          .set({ usedAt: now })
          .where(
            and(
              eq(recoveryCodes.userId, person.id),
              eq(recoveryCodes.codeHash, codeHash),
              isNull(recoveryCodes.usedAt),
            ),
          )
          .returning({ userId: recoveryCodes.userId });
        if (!row) return false;
        await appendAudit(
          transaction,
          {
            actor: person.name,
            action: 'user.totp_recovery_code',
            subject: subject(person),
            after: { recoveryCodesLeft: await codesLeft(transaction, person.id) },
          },
          now,
        );
        return true;
      });
    },

    async reset(person, actor) {
      const now = clock();
      await db.transaction(async (transaction) => {
        const [row] = await transaction
          .delete(secondFactors)
          .where(eq(secondFactors.userId, person.id))
          .returning({ confirmedAt: secondFactors.confirmedAt });
        if (!row) {
          throw new SecondFactorError('TOTP_NOT_ENROLLED', `${person.name} has no second factor to reset`);
        }
        await transaction.delete(recoveryCodes).where(eq(recoveryCodes.userId, person.id));
        await transaction.delete(loginChallenges).where(eq(loginChallenges.userId, person.id));
        await appendAudit(
          transaction,
          {
            actor,
            action: 'user.totp_reset',
            subject: subject(person),
            before: { confirmed: row.confirmedAt !== null },
          },
          now,
        );
      });
    },

    async openChallenge(person, tokenHash, expiredBefore) {
      await db.transaction(async (transaction) => {
        // Half-done logins that nobody finished go with the next one: the table stays as small as its use.
        await transaction.delete(loginChallenges).where(lt(loginChallenges.createdAt, expiredBefore));
        await transaction
          .insert(loginChallenges)
          .values({ tokenHash, userId: person.id, createdAt: clock() });
      });
    },

    async findChallenge(tokenHash, since) {
      const [row] = await db
        .select()
        .from(loginChallenges)
        .innerJoin(users, eq(users.id, loginChallenges.userId))
        .where(
          and(
            eq(loginChallenges.tokenHash, tokenHash),
            gte(loginChallenges.createdAt, since),
            isNull(users.disabledAt),
          ),
        );
      return row ? toPerson(row.users) : null;
    },

    async closeChallenge(tokenHash) {
      await db.delete(loginChallenges).where(eq(loginChallenges.tokenHash, tokenHash));
    },
  };
}
