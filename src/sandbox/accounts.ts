/**
 * Who is calling: the sandbox's accounts (each a Simulator of its own, selected by the bearer token of the
 * request, read tokens included), the access a token gives, and the log of the credentials the sandbox saw.
 * Tokens are resolved once, at the edge (the onRequest hook); the routes read the account from the request.
 */
import { createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { type Decimal, parseDecimal } from '../money.js';
import { notFound, readStringParam, SandboxHttpError } from './protocol.js';
import type { Simulator } from './simulator.js';
import type { SandboxOptions, SandboxRequestRecord } from './types.js';

export const DEMO_TOKEN = 'sandbox-demo-token';

/** The token of an account of the demo (no account names a service): `default` keeps the one it always had. */
export function demoTokenOf(account: string): string {
  return account === DEFAULT_ACCOUNT ? DEMO_TOKEN : `${DEMO_TOKEN}-${account}`;
}
/** The one account of a sandbox started with `tokens`/`readTokens` (or nothing): the worker's `default`. */
export const DEFAULT_ACCOUNT = 'default';
const DEFAULT_CREDIT_LIMIT = '1000000.00';
const ACCOUNT_NAME = /^[a-z0-9-]+$/;
const DEFAULT_REQUEST_LOG_SIZE = 1_000;

/** A start option the sandbox cannot serve; the message names the option and never repeats a token. */
export class SandboxOptionsError extends Error {
  override readonly name = 'SandboxOptionsError';
}

/** One account's settings, checked: its tokens by access and its credit line. */
export interface AccountSpec {
  name: string;
  tokens: readonly string[];
  readTokens: readonly string[];
  creditLimit: Decimal;
}

/**
 * The accounts a start asks for. Without `accounts`, the single-token options make one account named
 * `default`, exactly as the sandbox was before it had accounts. `creditLimit` is the credit line of every
 * account that does not set its own.
 */
export function resolveAccounts(options: SandboxOptions): AccountSpec[] {
  const creditLimit = parseDecimal(options.creditLimit ?? DEFAULT_CREDIT_LIMIT, 'creditLimit');
  if (options.accounts === undefined) {
    const tokens = options.tokens && options.tokens.length > 0 ? options.tokens : [DEMO_TOKEN];
    return [{ name: DEFAULT_ACCOUNT, tokens, readTokens: options.readTokens ?? [], creditLimit }];
  }
  if (options.tokens !== undefined || options.readTokens !== undefined) {
    throw new SandboxOptionsError('give either accounts or tokens/readTokens, not both');
  }
  if (options.accounts.length === 0) throw new SandboxOptionsError('accounts must list at least one account');
  const owners = new Map<string, string>();
  const names = new Set<string>();
  return options.accounts.map((account) => {
    if (!ACCOUNT_NAME.test(account.name)) {
      throw new SandboxOptionsError(
        `account name ${JSON.stringify(account.name)} must be lowercase letters, digits and hyphens`,
      );
    }
    if (names.has(account.name)) throw new SandboxOptionsError(`account ${account.name} is listed twice`);
    names.add(account.name);
    const readTokens = account.readTokens ?? [];
    for (const token of [account.token, ...readTokens]) {
      if (typeof token !== 'string' || token.trim() === '' || /\s/.test(token)) {
        throw new SandboxOptionsError(
          `account ${account.name}: a token must be non-empty text without spaces`,
        );
      }
      const owner = owners.get(token);
      // A token selects its account: one shared by two accounts could not say which one it speaks for.
      if (owner !== undefined && owner !== account.name) {
        throw new SandboxOptionsError(`accounts ${owner} and ${account.name} share a token`);
      }
      owners.set(token, account.name);
    }
    return {
      name: account.name,
      tokens: [account.token],
      readTokens,
      creditLimit:
        account.creditLimit === undefined
          ? creditLimit
          : parseDecimal(account.creditLimit, `creditLimit of account ${account.name}`),
    };
  });
}

/** How many requests the request log keeps. */
export function resolveRequestLogSize(options: SandboxOptions): number {
  const size = options.requestLogSize ?? DEFAULT_REQUEST_LOG_SIZE;
  if (!Number.isInteger(size) || size < 1) {
    throw new SandboxOptionsError(`requestLogSize must be a whole number of at least 1 (got ${size})`);
  }
  return size;
}

/** What a route needs: any valid token, a full-access token, or the admin token of the control API. */
export type Access = 'read' | 'write' | 'admin';

const RANK: Record<Access, number> = { read: 0, write: 1, admin: 2 };

interface Credential {
  access: Access;
  /** Undefined for the control API's own token when it is no account's. */
  account: Simulator | undefined;
  fingerprint: string;
}

/** SHA-256 (hex) of a credential: what the request log keeps instead of the credential itself. */
export function credentialFingerprint(credential: string): string {
  return createHash('sha256').update(credential).digest('hex');
}

/**
 * The accounts in the order they were listed, and every token mapped to its account and access. The admin
 * token reaches the control API; on the service's routes it acts as its own account, or as the first one
 * when it is no account's token.
 */
export class Accounts {
  private readonly credentials = new Map<string, Credential>();
  private readonly byName: Map<string, Simulator>;

  constructor(
    readonly all: readonly Simulator[],
    specs: readonly AccountSpec[],
    adminToken: string,
    readonly log: RequestLog,
  ) {
    this.byName = new Map(all.map((account) => [account.name, account]));
    // Lowest access first, so that a token listed twice keeps the higher one, as it always did.
    for (const access of ['read', 'write'] as const) {
      for (const spec of specs) {
        const account = this.byName.get(spec.name)!;
        for (const token of access === 'read' ? spec.readTokens : spec.tokens) {
          this.credentials.set(token, { access, account, fingerprint: credentialFingerprint(token) });
        }
      }
    }
    const admin = this.credentials.get(adminToken);
    this.credentials.set(adminToken, {
      access: 'admin',
      account: admin?.account,
      fingerprint: credentialFingerprint(adminToken),
    });
  }

  get(name: string): Simulator | undefined {
    return this.byName.get(name);
  }

  get first(): Simulator {
    return this.all[0]!;
  }

  /**
   * Records the request's credential, then checks it against the route's required access: 401 when it is
   * missing or unknown, 403 when it is known but not allowed. Answers the account the request acts on.
   * Messages never repeat the token.
   */
  admit(request: FastifyRequest, access: Access): Simulator {
    const header = request.headers.authorization;
    const match = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
    const credential = match === null ? undefined : this.credentials.get(match[1]!);
    const path = request.url.split('?')[0]!;
    const fingerprint =
      credential?.fingerprint ?? (header === undefined ? null : credentialFingerprint(match?.[1] ?? header));
    this.log.record(request.method, path, credential?.account?.name ?? 'unknown', fingerprint);
    if (header === undefined) throw new SandboxHttpError(401, 'missing bearer token');
    if (match === null) throw new SandboxHttpError(401, 'authorization header is not "Bearer <token>"');
    if (credential === undefined) throw new SandboxHttpError(401, 'unknown bearer token');
    if (RANK[credential.access] < RANK[access]) {
      throw new SandboxHttpError(403, `this token may not ${describe(access)}`);
    }
    return credential.account ?? this.first;
  }

  /** The account named by the control API's `account` query parameter; the first one without it. */
  named(query: Record<string, unknown>): Simulator {
    const name = readStringParam(query, 'account');
    if (name === undefined || name === '') return this.first;
    const account = this.byName.get(name);
    if (account === undefined) {
      throw notFound(
        `unknown account ${JSON.stringify(name)}; expected one of ${[...this.byName.keys()].join(', ')}`,
      );
    }
    return account;
  }

  /** The account that holds the order (order ids are unique across accounts); the first when none does. */
  holding(orderId: string): Simulator {
    return this.all.find((account) => account.ledger.get(orderId) !== undefined) ?? this.first;
  }
}

function describe(access: Access): string {
  return access === 'admin' ? 'use the sandbox control API' : 'change anything (read-only token)';
}

/**
 * The last N requests' credentials, oldest first: a test proves which tokens reached this sandbox (that
 * account A's never came to B's URL) without the sandbox keeping any token. A ring, so it costs the same
 * after a million requests.
 */
export class RequestLog {
  /** `at` as the clock's ms: formatted only when the log is read, not on every request. */
  private readonly entries: (Omit<SandboxRequestRecord, 'at'> & { at: number })[] = [];
  private next = 0;

  constructor(
    private readonly size: number,
    private readonly now: () => number,
  ) {}

  record(method: string, path: string, account: string, credential: string | null): void {
    const entry = { at: this.now(), method, path, account, credential };
    if (this.entries.length < this.size) this.entries.push(entry);
    else this.entries[this.next] = entry;
    this.next = (this.next + 1) % this.size;
  }

  list(): SandboxRequestRecord[] {
    const oldestFirst =
      this.entries.length < this.size
        ? this.entries
        : [...this.entries.slice(this.next), ...this.entries.slice(0, this.next)];
    return oldestFirst.map((entry) => ({ ...entry, at: new Date(entry.at).toISOString() }));
  }
}

/** The account a route acts for: the onRequest hook resolved it (or refused the request) before any route runs. */
export function accountOf(request: FastifyRequest): Simulator {
  if (request.account === null) throw new Error('sandbox: a route ran before its account was resolved');
  return request.account;
}
