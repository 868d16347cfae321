/**
 * The accounts in the console: which of them a request's person sees (their scope, made once in
 * context.ts), the account filter every list, download and report offers (`?account=NAME`, narrowing the
 * scope and never widening it: a name outside it is refused as unknown, 400), and the refusals of what lies
 * outside. A record of an account the person does not see is answered as one that does not exist (404); a
 * change that reaches every account (the kill switch) is refused to a person limited to some (403, the rule
 * of src/control/accounts.ts, which the REST API applies too).
 */
import { html } from 'hono/html';
import { type AccountScope, inScope, narrowScope } from '../db/index.js';
import { type ConsoleContext, type ConsoleRequest, PageNotFound, type PageRequest } from './context.js';
import type { Html } from './layout.js';

/** The deployment's accounts the person sees, in the settings' order. */
export function visibleAccounts({ accounts }: ConsoleContext, { scope }: ConsoleRequest): string[] {
  return [...accounts.keys()].filter((name) => inScope(scope, name));
}

/** A list's account filter: the account chosen (`?account=`; undefined: none), and the scope it reads. */
export interface AccountFilter {
  account: string | undefined;
  /** The person's scope, narrowed to the chosen account. */
  scope: AccountScope;
}

export function accountFilterOf(context: ConsoleContext, request: PageRequest): AccountFilter {
  const account = request.query.account || undefined;
  return { account, scope: narrowScope(request.scope, account, [...context.accounts.keys()]) };
}

/** The filter's field, for a list's form of filters (a GET form). */
export function accountField(context: ConsoleContext, request: PageRequest): Html {
  const chosen = accountFilterOf(context, request).account;
  return html`<label>Account <select name="account"><option value="">all</option>${visibleAccounts(context, request).map((name) => html`<option value="${name}" ${name === chosen ? 'selected' : ''}>${name}</option>`)}</select></label>`;
}

/** A list page's form holding only the account filter. */
export function accountFilterForm(context: ConsoleContext, request: PageRequest, action: string): Html {
  return html`<form method="get" action="${action}" class="filters">${accountField(context, request)} <button type="submit">Filter</button></form>`;
}

/** A record of another account is, to this person, a record that does not exist. */
export function requireVisible(scope: AccountScope, account: string, notFound: string): void {
  if (!inScope(scope, account)) throw new PageNotFound(notFound);
}
