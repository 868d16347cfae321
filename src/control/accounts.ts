/**
 * What a reader's accounts (their scope, issue 35) allow beyond their rows, for the console and the REST
 * API alike: what every account shares, the kill switch, is changed only by someone who sees every account.
 * A record of an account outside the scope is, to the reader, one that does not exist: each door answers it
 * as its own "not found".
 */
import type { AccountScope } from '../db/index.js';
import { TreasuryError } from '../errors.js';

export class AccountScopeError extends TreasuryError {
  override readonly name = 'AccountScopeError';
  readonly code = 'ACCOUNTS_LIMITED';
}

export function requireEveryAccount(scope: AccountScope, what: string): void {
  if (scope.accounts !== null) {
    throw new AccountScopeError(
      `${what} acts on every account, and you see only ${scope.accounts.join(', ')}: ask someone who sees them all`,
    );
  }
}
