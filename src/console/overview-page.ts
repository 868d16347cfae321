/**
 * The overview: the kill switch and the replicas, the alerts that fire now, each strategy's spend against its
 * budgets, the credit line against the guards, and what the cycles of the last 24 hours came to. The live part refreshes itself with
 * htmx every few seconds; without JavaScript the page is read as it was served.
 */
import { html } from 'hono/html';
import type { CycleState } from '../db/index.js';
import { ZERO } from '../money.js';
import { spendBar } from './charts.js';
import type { ConsoleContext, PageRequest } from './context.js';
import { alertsFiringNow, alertsPanel } from './firing-alerts.js';
import { actionButton, type Html, instant, money, table } from './layout.js';
import { allows } from './permissions.js';
import { spendOf, viewOf } from './strategy-config.js';

const COUNTED: CycleState[] = ['placed', 'skipped', 'failed', 'unsure', 'awaiting_approval'];
/** A parked cycle is `awaiting_approval` in the database and "parked" to the people it waits for. */
const LABELS: Partial<Record<CycleState, string>> = { awaiting_approval: 'parked' };
const DAY_MS = 86_400_000;

export async function overviewPage(context: ConsoleContext, request: PageRequest): Promise<Html> {
  return html`<div id="live" hx-get="/live" hx-trigger="every 5s" hx-swap="outerHTML">${await liveOverview(context, request)}</div>`;
}

/** The refreshed fragment (also served alone at /live). */
export async function liveOverview(context: ConsoleContext, { session }: PageRequest): Promise<Html> {
  const { database, store, clock } = context;
  const now = clock();
  const [control, replicas, strategies, counts, balance] = await Promise.all([
    database.control.get(),
    database.replicas.list(),
    database.strategies.list(),
    store.reads.countByStateSince(new Date(now.getTime() - DAY_MS)),
    database.balances.latest(),
  ]);
  const [spends, alerts] = await Promise.all([
    Promise.all(strategies.map((record) => spendOf(database, viewOf(record), now))),
    alertsFiringNow(context, now, { control, strategies }),
  ]);
  const canOperate = allows(session.person.role, 'operate');
  const killSwitch = control.paused
    ? html`<div class="banner banner-paused"><strong>KILL SWITCH ON</strong>: every cycle is skipped. ${control.reason ?? ''} (by ${control.changedBy ?? '?'}, ${instant(control.changedAt)})
      ${canOperate ? actionButton(session, '/kill-switch/resume', 'Resume all', '/') : ''}</div>`
    : html`<div class="banner banner-running">Running: cycles place orders.
      ${canOperate ? actionButton(session, '/kill-switch/pause', 'Pause all (kill switch)', '/') : ''}</div>`;
  const guardLines = spends
    .filter((s) => s.view.minCreditAvailable || s.view.maxCreditUsedPct)
    .map(
      (s) =>
        html`<li>${s.view.record.name}: ${s.view.minCreditAvailable ? html`needs at least ${money(s.view.minCreditAvailable)} available` : ''}${s.view.maxCreditUsedPct ? html`${s.view.minCreditAvailable ? ',' : ''} at most ${s.view.maxCreditUsedPct.toString()}% used` : ''}</li>`,
    );
  return html`${killSwitch}
<h2>Alerts that fire now</h2>
${alertsPanel(alerts)}
<h2>Last 24 hours</h2>
<div class="cards">${COUNTED.map((state) => html`<div class="card"><b>${counts.get(state) ?? 0}</b>${LABELS[state] ?? state}</div>`)}</div>
<h2>Spend against budget</h2>
${table(
  ['Strategy', 'Today', 'Budget / day', '', 'This month', 'Budget / month', ''],
  spends.map(
    (s) => html`<tr><td><a href="/strategies#${s.view.record.name}">${s.view.record.name}</a></td>
<td class="num">${money(s.spentDay)}</td><td class="num">${money(s.view.perDay)}</td><td>${spendBar(`${s.view.record.name} today`, s.spentDay, s.view.perDay)}</td>
<td class="num">${money(s.spentMonth)}</td><td class="num">${money(s.view.perMonth)}</td><td>${spendBar(`${s.view.record.name} this month`, s.spentMonth, s.view.perMonth)}</td></tr>`,
  ),
  'No strategy recorded yet: the worker records them when it loads the strategy files.',
)}
<h2>Credit</h2>
${
  balance
    ? html`<p>Available <strong>${money(balance.credit.available)}</strong> of ${money(balance.credit.total)} (used ${money(balance.credit.used)}, ${balance.credit.total.gt(ZERO) ? balance.credit.used.div(balance.credit.total).times(100).toFixed(1) : '0.0'}%), withdrawals ${balance.canWithdraw ? 'allowed' : 'BLOCKED'}; as of ${instant(balance.takenAt)}.</p>`
    : html`<p class="empty">No balance read yet.</p>`
}
${guardLines.length > 0 ? html`<ul>${guardLines}</ul>` : ''}
<h2>Replicas</h2>
${table(
  ['Replica', 'Host', 'PID', 'Started', 'Last heartbeat'],
  replicas.map(
    (r) =>
      html`<tr><td>${r.id}</td><td>${r.host}</td><td>${r.pid}</td><td>${instant(r.startedAt)}</td><td>${instant(r.heartbeatAt)}</td></tr>`,
  ),
  'No worker is running (the console alone does not run cycles).',
)}`;
}
