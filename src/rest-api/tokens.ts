/**
 * The REST API's bearer tokens: `tbk_`, a public lookup part (12 characters) and a secret part (43
 * characters, 256 random bits), base64url. The prefix lets a secret scanner recognise one in a repository or
 * a log; the lookup part finds the row; only the SHA-256 of the secret part is stored, compared in constant
 * time. A token is read from the database at every request, so a revocation or an expiry holds at the next
 * request on every replica. Below: each token's request limit.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ApiToken, ApiTokensRepository } from '../db/index.js';

export const TOKEN_PREFIX = 'tbk_';
const TOKEN_FORM = /^tbk_([A-Za-z0-9_-]{12})([A-Za-z0-9_-]{43})$/;

/** "Last used" is written at most this often per token: a script polling every second writes once a minute. */
const MARK_USED_EVERY_MS = 60_000;

export interface NewApiToken {
  /** The token as its holder sends it: shown once, never stored. */
  token: string;
  lookup: string;
  secretHash: string;
}

const hashSecret = (secret: string) => createHash('sha256').update(secret).digest('hex');

export function newApiToken(): NewApiToken {
  const lookup = randomBytes(9).toString('base64url');
  const secret = randomBytes(32).toString('base64url');
  return { token: `${TOKEN_PREFIX}${lookup}${secret}`, lookup, secretHash: hashSecret(secret) };
}

/** Why a request's credentials were refused, with the problem code it answers. */
export class TokenRefusal extends Error {
  override readonly name = 'TokenRefusal';
  constructor(
    readonly code: 'TOKEN_MISSING' | 'TOKEN_INVALID' | 'TOKEN_REVOKED' | 'TOKEN_EXPIRED',
    message: string,
  ) {
    super(message);
  }
}

/**
 * The live token an `Authorization: Bearer …` header carries. Unknown and malformed tokens get one answer,
 * so that the refusal tells a guesser nothing; a revoked or expired one says so, since only its holder has it.
 */
export async function authenticate(
  tokens: ApiTokensRepository,
  authorization: string | undefined,
  now: Date,
): Promise<ApiToken> {
  const bearer = /^Bearer +(\S+) *$/i.exec(authorization ?? '');
  if (!bearer?.[1]) {
    throw new TokenRefusal('TOKEN_MISSING', 'send the API token as `Authorization: Bearer tbk_…`');
  }
  const parts = TOKEN_FORM.exec(bearer[1]);
  const unknown = new TokenRefusal('TOKEN_INVALID', 'the API token is not one of this deployment');
  if (!parts?.[1] || !parts[2]) throw unknown;
  const found = await tokens.findByLookup(parts[1]);
  if (!found) throw unknown;
  const given = Buffer.from(hashSecret(parts[2]), 'hex');
  const stored = Buffer.from(found.secretHash, 'hex');
  if (given.length !== stored.length || !timingSafeEqual(given, stored)) throw unknown;
  if (found.revokedAt !== null) {
    throw new TokenRefusal('TOKEN_REVOKED', `the API token "${found.name}" was revoked`);
  }
  if (found.expired) {
    throw new TokenRefusal(
      'TOKEN_EXPIRED',
      `the API token "${found.name}" expired at ${found.expiresAt?.toISOString()}`,
    );
  }
  if (found.lastUsedAt === null || now.getTime() - found.lastUsedAt.getTime() >= MARK_USED_EVERY_MS) {
    await tokens.markUsed(found.id);
  }
  const { secretHash: _kept, expired: _no, ...token } = found;
  return token;
}

/**
 * The request limit of each token (console.apiRequestsPerMinute), on this replica: a token bucket that holds
 * a minute's requests and refills evenly, so a script may burst up to the limit and then keeps its pace. A
 * replica counts only what reaches it; behind a load balancer the limit is per replica, which bounds what
 * one runaway script costs each of them.
 */
export interface TokenRateLimit {
  /** Takes one request of the token's budget: 0 when allowed, else the seconds until one is available. */
  take(tokenId: number, now: Date): number;
}

export function createTokenRateLimit(requestsPerMinute: number): TokenRateLimit {
  const perMs = requestsPerMinute / 60_000;
  const buckets = new Map<number, { tokens: number; at: number }>();
  return {
    take(tokenId, now) {
      const at = now.getTime();
      const bucket = buckets.get(tokenId) ?? { tokens: requestsPerMinute, at };
      bucket.tokens = Math.min(requestsPerMinute, bucket.tokens + Math.max(0, at - bucket.at) * perMs);
      bucket.at = at;
      buckets.set(tokenId, bucket);
      if (bucket.tokens >= 1) {
        bucket.tokens -= 1;
        return 0;
      }
      return Math.ceil((1 - bucket.tokens) / perMs / 1000);
    },
  };
}
