/**
 * The REST API's bearer tokens and the answers kept for its idempotency keys. A token arrives already split
 * and hashed (src/rest-api/tokens.ts): its public `lookup` part finds the row, the SHA-256 of its secret part
 * is compared by the caller in constant time; the token itself never reaches the database. Adding and
 * revoking a token are written with their audit row in one transaction. Whether a token has expired is
 * judged by the database's clock, as approval deadlines are, so every replica refuses it at the same moment.
 */
import { and, asc, eq, isNull, lt, sql } from 'drizzle-orm';
import { TreasuryError } from '../../errors.js';
import type { DrizzleHandle } from '../connection.js';
import { toJson } from '../json.js';
import { apiIdempotencyKeys, apiTokens } from '../schema.js';
import type { JsonValue } from '../types.js';
import { appendAudit } from './audit.js';
import { foldedName, RESERVED_NAME, type Role } from './people.js';

export interface ApiToken {
  id: number;
  name: string;
  role: Role;
  /** The accounts the token may read and act on; null: every account. */
  accounts: string[] | null;
  /** The token's public part, shown by `token list` so a person can tell which one they hold. */
  lookup: string;
  createdAt: Date;
  createdBy: string;
  expiresAt: Date | null;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
  revokedBy: string | null;
}

/** A token as a request finds it: with its secret's hash, and whether it has expired by the database's clock. */
export interface ApiTokenFound extends ApiToken {
  secretHash: string;
  expired: boolean;
}

export interface ApiTokenInput {
  name: string;
  role: Role;
  accounts: string[] | null;
  expiresAt: Date | null;
  lookup: string;
  secretHash: string;
}

export class ApiTokenError extends TreasuryError {
  override readonly name = 'ApiTokenError';
  constructor(
    readonly code: 'TOKEN_EXISTS' | 'TOKEN_NOT_FOUND' | 'TOKEN_NAME_RESERVED',
    message: string,
  ) {
    super(message);
  }
}

/** What an idempotency key holds when a request arrives with it. */
export type IdempotencyClaim =
  | { kind: 'new' }
  | { kind: 'replay'; status: number; answer: JsonValue }
  | { kind: 'running' }
  | { kind: 'other-request' };

/** How long a key's first answer is kept (Stripe keeps its keys a day too). */
export const IDEMPOTENCY_KEPT_MS = 24 * 3_600_000;

export interface ApiTokensRepository {
  add(input: ApiTokenInput, actor: string): Promise<ApiToken>;
  /** Every token, live and revoked, oldest first. */
  list(): Promise<ApiToken[]>;
  /** Revokes the live token of that name. */
  revoke(name: string, actor: string): Promise<ApiToken>;
  findByLookup(lookup: string): Promise<ApiTokenFound | null>;
  markUsed(id: number): Promise<void>;
  /** Takes the key for this request, or says what it already holds. */
  claimKey(tokenId: number, key: string, requestHash: string): Promise<IdempotencyClaim>;
  /** Keeps the first answer under the key. */
  keepAnswer(tokenId: number, key: string, status: number, answer: unknown): Promise<void>;
  /** Lets the key go: the request failed on our side, and a retry under it must run again. */
  releaseKey(tokenId: number, key: string): Promise<void>;
}

type TokenRow = typeof apiTokens.$inferSelect;

function toToken(row: TokenRow): ApiToken {
  return {
    id: row.id,
    name: row.name,
    role: row.role as Role,
    accounts: row.accounts,
    lookup: row.lookup,
    createdAt: row.createdAt,
    createdBy: row.createdBy,
    expiresAt: row.expiresAt,
    lastUsedAt: row.lastUsedAt,
    revokedAt: row.revokedAt,
    revokedBy: row.revokedBy,
  };
}

/** What the audit log keeps of a token: never its secret's hash. */
const auditView = ({ name, role, accounts, expiresAt, revokedAt }: ApiToken) => ({
  name,
  role,
  accounts,
  expiresAt,
  revokedAt,
});

export function createApiTokensRepository(db: DrizzleHandle, clock: () => Date): ApiTokensRepository {
  const keyOf = (tokenId: number, key: string) =>
    and(eq(apiIdempotencyKeys.tokenId, tokenId), eq(apiIdempotencyKeys.key, key));

  return {
    async add(input, actor) {
      const name = foldedName(input.name);
      // Every act through a token is recorded under its name: the worker's own name would hide it.
      if (name === RESERVED_NAME) {
        throw new ApiTokenError(
          'TOKEN_NAME_RESERVED',
          `"${input.name}" is the worker's own name: choose another`,
        );
      }
      const now = clock();
      return db.transaction(async (tx) => {
        const [row] = await tx
          .insert(apiTokens)
          .values({ ...input, name, createdAt: now, createdBy: actor })
          .onConflictDoNothing()
          .returning();
        if (!row) throw new ApiTokenError('TOKEN_EXISTS', `a live token named "${name}" already exists`);
        const token = toToken(row);
        await appendAudit(
          tx,
          { actor, action: 'token.add', subject: `token:${name}`, after: auditView(token) },
          now,
        );
        return token;
      });
    },

    async list() {
      return (await db.select().from(apiTokens).orderBy(asc(apiTokens.id))).map(toToken);
    },

    async revoke(given, actor) {
      const name = foldedName(given);
      const now = clock();
      return db.transaction(async (tx) => {
        const [row] = await tx
          .update(apiTokens)
          .set({ revokedAt: now, revokedBy: actor })
          .where(and(eq(apiTokens.name, name), isNull(apiTokens.revokedAt)))
          .returning();
        if (!row) throw new ApiTokenError('TOKEN_NOT_FOUND', `no live token named "${name}"`);
        const after = toToken(row);
        const before = { ...after, revokedAt: null };
        await appendAudit(
          tx,
          {
            actor,
            action: 'token.revoke',
            subject: `token:${name}`,
            before: auditView(before),
            after: auditView(after),
          },
          now,
        );
        return after;
      });
    },

    async findByLookup(lookup) {
      const [found] = await db
        .select({
          row: apiTokens,
          expired: sql<boolean>`coalesce(${apiTokens.expiresAt} <= now(), false)`,
        })
        .from(apiTokens)
        .where(eq(apiTokens.lookup, lookup));
      return found
        ? { ...toToken(found.row), secretHash: found.row.secretHash, expired: found.expired }
        : null;
    },

    async markUsed(id) {
      await db.update(apiTokens).set({ lastUsedAt: clock() }).where(eq(apiTokens.id, id));
    },

    async claimKey(tokenId, key, requestHash) {
      const now = clock();
      await db
        .delete(apiIdempotencyKeys)
        .where(lt(apiIdempotencyKeys.createdAt, new Date(now.getTime() - IDEMPOTENCY_KEPT_MS)));
      const [taken] = await db
        .insert(apiIdempotencyKeys)
        .values({ tokenId, key, requestHash, createdAt: now })
        .onConflictDoNothing()
        .returning({ key: apiIdempotencyKeys.key });
      if (taken) return { kind: 'new' };
      const [row] = await db.select().from(apiIdempotencyKeys).where(keyOf(tokenId, key));
      // Released between the two statements: its request failed, and this one is the retry still running.
      if (!row) return { kind: 'running' };
      if (row.requestHash !== requestHash) return { kind: 'other-request' };
      if (row.status === null) return { kind: 'running' };
      return { kind: 'replay', status: row.status, answer: row.answer as JsonValue };
    },

    async keepAnswer(tokenId, key, status, answer) {
      await db
        .update(apiIdempotencyKeys)
        .set({ status, answer: toJson(answer) })
        .where(keyOf(tokenId, key));
    },

    async releaseKey(tokenId, key) {
      await db.delete(apiIdempotencyKeys).where(keyOf(tokenId, key));
    },
  };
}
