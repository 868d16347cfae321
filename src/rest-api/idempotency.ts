/**
 * Idempotent POSTs, by the `Idempotency-Key` header (as Stripe's API and the IETF httpapi draft use it): the
 * first request under a key runs, and its answer, success or refusal, is kept in the database for a day
 * under the token; a replay gets that same answer (marked `Idempotent-Replayed: true`) on any replica, and
 * another request under the same key is refused (422) rather than answered with the first one's result. An
 * answer of a failure on our side (5xx) is not kept, so that a retry runs again. Without the header a POST
 * simply runs.
 */
import { createHash } from 'node:crypto';
import type { ApiTokensRepository } from '../db/index.js';
import { ApiProblem } from './problems.js';

export interface Answer {
  status: number;
  body: unknown;
}

const KEY_FORM = /^[\x21-\x7E]{1,255}$/;

/** The request a key stands for: its method, path and body, members in any order. */
export function requestFingerprint(method: string, path: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method} ${path}\n${canonicalJson(body ?? {})}`)
    .digest('hex');
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const members = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${members.map(([key, member]) => `${JSON.stringify(key)}:${canonicalJson(member)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Runs `run` once per key and token; answers a replay with the first answer. */
export async function answerIdempotently(
  tokens: ApiTokensRepository,
  tokenId: number,
  key: string | undefined,
  fingerprint: string,
  run: () => Promise<Answer>,
): Promise<Answer & { replayed: boolean }> {
  if (key === undefined) return { ...(await run()), replayed: false };
  if (!KEY_FORM.test(key)) {
    throw new ApiProblem(
      'INVALID_ARGUMENT',
      'Idempotency-Key: 1 to 255 visible ASCII characters, such as a UUID',
      [{ field: 'header.Idempotency-Key', message: '1 to 255 visible ASCII characters' }],
    );
  }
  const claim = await tokens.claimKey(tokenId, key, fingerprint);
  if (claim.kind === 'other-request') {
    throw new ApiProblem(
      'IDEMPOTENCY_KEY_REUSED',
      `the Idempotency-Key "${key}" was used for another request (another operation or body): use a new key for a new request`,
    );
  }
  if (claim.kind === 'running') {
    throw new ApiProblem(
      'IDEMPOTENCY_KEY_IN_USE',
      `the first request with the Idempotency-Key "${key}" has not answered yet: retry once it has`,
    );
  }
  if (claim.kind === 'replay') return { status: claim.status, body: claim.answer, replayed: true };
  let answer: Answer;
  try {
    answer = await run();
  } catch (error) {
    await tokens.releaseKey(tokenId, key);
    throw error;
  }
  if (answer.status >= 500) await tokens.releaseKey(tokenId, key);
  else await tokens.keepAnswer(tokenId, key, answer.status, answer.body);
  return { ...answer, replayed: false };
}
