/**
 * The page shell and the small pieces every page uses. Templates are hono's `html` tagged literals: every
 * interpolated value is escaped unless it is itself a template, so a strategy name or a reason from the
 * database can only ever render as text.
 */
import type { FastifyReply } from 'fastify';
import { html } from 'hono/html';
import type { ConsoleSession } from '../db/index.js';
import type { Decimal } from '../money.js';
import { allows } from './permissions.js';

export type Html = ReturnType<typeof html>;

export interface PageInput {
  title: string;
  session: ConsoleSession | null;
  body: Html;
}

const NAV: { href: string; label: string; admin?: boolean }[] = [
  { href: '/', label: 'Overview' },
  { href: '/strategies', label: 'Strategies' },
  { href: '/orders', label: 'Orders' },
  { href: '/attention', label: 'Attention' },
  { href: '/approvals', label: 'Approvals' },
  { href: '/audit', label: 'Audit log', admin: true },
  { href: '/users', label: 'Users', admin: true },
  { href: '/account', label: 'Account' },
];

/** A rendered page as the answer, with its status. */
export async function sendPage(reply: FastifyReply, status: number, body: Html): Promise<FastifyReply> {
  return reply
    .code(status)
    .type('text/html; charset=utf-8')
    .send(String(await body));
}

export function page({ title, session, body }: PageInput): Html {
  const links = NAV.filter((item) => !item.admin || (session && allows(session.person.role, 'administer')));
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="htmx-config" content='{"includeIndicatorStyles":false,"allowEval":false}'>
<title>${title} · treasury-bot</title>
<link rel="stylesheet" href="/assets/console.css">
<script src="/assets/htmx.min.js" defer></script>
</head>
<body>
<header>
  <strong>treasury-bot</strong>
  ${
    session
      ? html`<nav>${links.map((item) => html`<a href="${item.href}">${item.label}</a>`)}</nav>
  <form method="post" action="/logout" class="inline">${csrfField(session)}
    <span class="who">${session.person.name} (${session.person.role})</span>
    <button type="submit">Log out</button>
  </form>`
      : ''
  }
</header>
<main>
<h1>${title}</h1>
${body}
</main>
</body>
</html>`;
}

export function csrfField(session: ConsoleSession): Html {
  return html`<input type="hidden" name="_csrf" value="${session.csrfToken}">`;
}

/** A one-button form that posts an action with the session's CSRF token. */
export function actionButton(session: ConsoleSession, action: string, label: string, back: string): Html {
  return html`<form method="post" action="${action}" class="inline">${csrfField(session)}<input type="hidden" name="back" value="${back}"><button type="submit">${label}</button></form>`;
}

export const instant = (at: Date | null | undefined): Html =>
  at
    ? html`<time datetime="${at.toISOString()}">${at.toISOString().replace('T', ' ').slice(0, 19)}Z</time>`
    : html`—`;

export const money = (value: Decimal | null | undefined): string => (value ? value.toFixed(2) : '—');

export const stateBadge = (state: string): Html => html`<span class="state state-${state}">${state}</span>`;

export function table(headers: string[], rows: Html[], empty: string): Html {
  if (rows.length === 0) return html`<p class="empty">${empty}</p>`;
  return html`<table><thead><tr>${headers.map((h) => html`<th>${h}</th>`)}</tr></thead><tbody>${rows}</tbody></table>`;
}

export const CONSOLE_CSS = `
body{font-family:system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{display:flex;gap:1.5rem;align-items:center;padding:.6rem 1.2rem;background:#1d2330;color:#fff}
header a{color:#cfe0ff;margin-right:1rem;text-decoration:none}
header form{margin-left:auto}
main{padding:1rem 1.5rem;max-width:1200px}
h1{font-size:1.4rem}
h2{font-size:1.1rem;margin-top:1.6rem}
table{border-collapse:collapse;width:100%;background:#fff;margin:.5rem 0}
th,td{border-bottom:1px solid #dde1e7;padding:.35rem .5rem;text-align:left;font-size:.9rem;vertical-align:top}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.inline{display:inline}
.state{padding:.05rem .4rem;border-radius:.3rem;background:#e4e7ec;font-size:.85rem}
.state-placed,.state-settled,.state-pass,.state-completed{background:#d4f3dd}
.state-active{background:#d8e5fb}
.state-skipped,.state-dry_run{background:#eef0b8}
.state-failed,.state-unsure,.state-fail,.state-page,.state-missed{background:#f8d0d0}
.state-ticket{background:#f3dfb0}
.banner{padding:.6rem 1rem;border-radius:.3rem;margin:.5rem 0}
.banner-paused{background:#f8d0d0}
.banner-running{background:#d4f3dd}
.error{background:#f8d0d0;padding:.6rem 1rem}
.empty{color:#667}
.cards{display:flex;gap:1rem;flex-wrap:wrap}
.card{background:#fff;padding:.6rem 1rem;border:1px solid #dde1e7;border-radius:.3rem;min-width:8rem}
.card b{display:block;font-size:1.4rem}
svg{background:#fff;border:1px solid #dde1e7}
form.filters label{margin-right:.8rem}
pre{background:#fff;padding:.5rem;overflow:auto}
`;
