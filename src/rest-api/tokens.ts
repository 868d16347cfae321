/**
 * The REST API's bearer tokens: `tbk_`, a public lookup part (12 characters) and a secret part (43
 * characters, 256 random bits), base64url. The prefix lets a secret scanner recognise one in a repository or
 * a log; the lookup part finds the row; only the SHA-256 of the secret part is stored, compared in constant
 * time. A token is read from the database at every request, so a revocation or an expiry holds at the next
 * request on every replica.
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
