/**
 * The admin's pages: the audit log (newest first, paged, each row with the account of what it names) and the
 * people who may log in, with the accounts each is limited to.
 */
import { html } from 'hono/html';
import { ROLES } from '../db/index.js';
import { accountFilterForm, accountFilterOf } from './accounts.js';
import type { ConsoleContext, PageRequest } from './context.js';
import { actionButton, csrfField, type Html, instant, table } from './layout.js';
import { MIN_PASSWORD_LENGTH } from './passwords.js';

const AUDIT_PAGE_SIZE = 100;

export async function auditPage(context: ConsoleContext, request: PageRequest): Promise<Html> {
  const { query } = request;
  const beforeId = query.before && /^\d{1,15}$/.test(query.before) ? Number(query.before) : undefined;
  const { account, scope } = accountFilterOf(context, request);
  // With an account chosen, the rows naming none of it (people, sessions, the kill switch) are left out.
  const rows = await context.store.reads.auditEntries({ scope, beforeId, limit: AUDIT_PAGE_SIZE });
  const last = rows.at(-1);
  const older = new URLSearchParams({ ...(account ? { account } : {}), before: String(last?.id ?? '') });
  const json = (value: unknown) => (value === null ? '' : JSON.stringify(value));
  return html`${accountFilterForm(context, request, '/audit')}
${table(
  ['When', 'Who', 'What', 'Account', 'Subject', 'Before', 'After'],
  rows.map(
    (r) =>
      html`<tr><td>${instant(r.at)}</td><td>${r.actor}</td><td>${r.action}</td><td>${r.account ?? ''}</td><td>${r.subject ?? ''}</td><td><code>${json(r.before)}</code></td><td><code>${json(r.after)}</code></td></tr>`,
  ),
  'Nothing recorded yet.',
)}
${rows.length === AUDIT_PAGE_SIZE && last ? html`<p><a href="/audit?${older.toString()}">Older entries →</a></p>` : ''}`;
}

export async function usersPage(context: ConsoleContext, { session }: PageRequest): Promise<Html> {
  const people = await context.store.people.list();
  return html`${table(
    ['Name', 'Role', 'Accounts', 'Created', 'Status', ''],
    people.map(
      (
        p,
      ) => html`<tr><td>${p.name}</td><td>${p.role}</td><td>${p.accounts === null ? 'all' : p.accounts.join(', ')}</td><td>${instant(p.createdAt)}</td><td>${p.disabledAt ? html`disabled ${instant(p.disabledAt)}` : 'active'}</td>
<td>${p.disabledAt || p.id === session.person.id ? '' : actionButton(session, `/users/${encodeURIComponent(p.name)}/disable`, 'Disable', '/users')}</td></tr>`,
    ),
    'Nobody yet.',
  )}
<h2>Add a person</h2>
<form method="post" action="/users">${csrfField(session)}
<label>Name <input name="name" required pattern="[A-Za-z0-9._@-]{1,64}"></label>
<label>Role <select name="role">${ROLES.map((role) => html`<option value="${role}">${role}</option>`)}</select></label>
<label>Password <input type="password" name="password" required minlength="${MIN_PASSWORD_LENGTH}" autocomplete="new-password"></label>
<fieldset><legend>Limited to the accounts (none ticked: every account; an admin always sees every one)</legend>
${[...context.accounts.keys()].map((name) => html`<label><input type="checkbox" name="accounts" value="${name}"> ${name}</label> `)}</fieldset>
<button type="submit">Add</button></form>`;
}

/**
 * The login form; with single sign-on, a link to the provider above it, or alone when local passwords are
 * off.
 */
export function loginPage(
  csrfToken: string,
  message: string | null,
  signOn?: { provider: string; localLogin: boolean },
): Html {
  const single = signOn
    ? html`<p><a class="button" href="/login/oidc">Sign in with ${signOn.provider}</a></p>`
    : '';
  if (signOn && !signOn.localLogin) {
    return html`${message ? html`<p class="error">${message}</p>` : ''}${single}`;
  }
  return html`${message ? html`<p class="error">${message}</p>` : ''}${single}
<form method="post" action="/login">
<input type="hidden" name="_csrf" value="${csrfToken}">
<p><label>Name <input name="name" autocomplete="username" required autofocus></label></p>
<p><label>Password <input type="password" name="password" autocomplete="current-password" required></label></p>
<p><button type="submit">Log in</button></p>
</form>`;
}
