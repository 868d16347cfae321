/**
 * Which accounts a reader may see (issue 35): made once at the edge (the CLI's `--account`, the console's
 * person, the REST API's token) and handed whole to the reads below it, which narrow every query by it. A
 * listing of people-facing rows takes a scope as a required argument, so that no door can forget one.
 */
import { inArray, type SQL } from 'drizzle-orm';
import type { PgColumn } from 'drizzle-orm/pg-core';

export interface AccountScope {
  /** The accounts within reach; null: every account, those no setting names any more included. */
  readonly accounts: readonly string[] | null;
}

/** Every account: the worker's own reads, an admin, a command run without `--account`. */
export const EVERY_ACCOUNT: AccountScope = Object.freeze({ accounts: null });

export function oneAccount(name: string): AccountScope {
  return { accounts: [name] };
}

export function inScope(scope: AccountScope, account: string): boolean {
  return scope.accounts === null || scope.accounts.includes(account);
}

/** An account asked for that the scope does not reach among the deployment's: named, with those it does. */
export class AccountNotInScopeError extends Error {
  override readonly name = 'AccountNotInScopeError';
  readonly code = 'ACCOUNT_UNKNOWN';
  constructor(
    readonly account: string,
    readonly reachable: readonly string[],
  ) {
    super(
      `no account named ${JSON.stringify(account)} (${reachable.length === 0 ? 'no account is within reach' : `accounts: ${reachable.join(', ')}`})`,
    );
  }
}

/**
 * The scope narrowed to the one account a reader asked for (`--account`, `?account=`); unchanged when none
 * was asked for. `known`: the deployment's accounts (settings), so that a misspelt name is refused rather
 * than shown as an account with no rows; one beyond the scope is refused the same way, unnamed.
 */
export function narrowScope(
  scope: AccountScope,
  asked: string | undefined,
  known: readonly string[],
): AccountScope {
  if (asked === undefined) return scope;
  const reachable = known.filter((account) => inScope(scope, account));
  if (!reachable.includes(asked)) throw new AccountNotInScopeError(asked, reachable);
  return oneAccount(asked);
}

/** The scope as a query condition on an account column; undefined (no condition) for every account. */
export function accountCondition(column: PgColumn, scope: AccountScope): SQL | undefined {
  // An empty list reaches nothing (drizzle writes it as `false`).
  return scope.accounts === null ? undefined : inArray(column, [...scope.accounts]);
}

/**
 * The scope as one `text[]` parameter of a statement written as text (src/db/report-queries.ts): a
 * PostgreSQL array literal, each name quoted, or null for every account.
 */
export function accountsParameter(scope: AccountScope): string | null {
  if (scope.accounts === null) return null;
  return `{${scope.accounts.map((name) => `"${name.replace(/["\\]/g, '\\$&')}"`).join(',')}}`;
}
