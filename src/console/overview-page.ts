/**
 * The overview: the kill switch and the replicas, the alerts that fire now, each account's balance, credit,
 * spend and open orders with the group's total, each strategy's spend against its budgets, each target's
 * progress, the credit guards, and what the cycles of the last 24 hours came to. Everything of an account is
 * read through the request's account scope (narrowed by `?account=`): a person limited to some accounts sees
 * theirs, and a total of theirs. The live part refreshes itself with htmx every few seconds; without
 * JavaScript the page is read as it was served.
 */
import { html } from 'hono/html';
import { readTargets } from '../control/index.js';
import type { BalanceSnapshot, CycleState, OpenOrders } from '../db/index.js';
import { type Decimal, ZERO } from '../money.js';
import { accountFilterForm, accountFilterOf, visibleAccounts } from './accounts.js';
import { spendBar } from './charts.js';
import type { ConsoleContext, PageRequest } from './context.js';
import { alertsFiringNow, alertsPanel } from './firing-alerts.js';
import { actionButton, type Html, instant, money, table } from './layout.js';
import { allows } from './permissions.js';
import { type StrategySpend, spendOf, viewOf } from './strategy-config.js';
import { targetsOverview } from './targets.js';

const COUNTED: CycleState[] = ['placed', 'skipped', 'failed', 'unsure', 'awaiting_approval'];
/** A parked cycle is `awaiting_approval` in the database and "parked" to the people it waits for. */
const LABELS: Partial<Record<CycleState, string>> = { awaiting_approval: 'parked' };
const DAY_MS = 86_400_000;

export async function overviewPage(context: ConsoleContext, request: PageRequest): Promise<Html> {
  const chosen = accountFilterOf(context, request).account;
  const live = chosen === undefined ? '/live' : `/live?account=${encodeURIComponent(chosen)}`;
  return html`${accountFilterForm(context, request, '/')}
<div id="live" hx-get="${live}" hx-trigger="every 5s" hx-swap="outerHTML">${await liveOverview(context, request)}</div>`;
}

/** One account's line of the overview, or the total of several. */
interface AccountFigures {
  balance: BalanceSnapshot | null;
  spentDay: Decimal;
  spentMonth: Decimal;
  open: OpenOrders;
}

/** The refreshed fragment (also served alone at /live). */
export async function liveOverview(context: ConsoleContext, request: PageRequest): Promise<Html> {
  const { database, store, clock } = context;
  const { session } = request;
  const now = clock();
  const { scope } = accountFilterOf(context, request);
  const accounts = scope.accounts ?? visibleAccounts(context, request);
  const [control, replicas, strategies, counts, balances, open] = await Promise.all([
    database.control.get(),
    database.replicas.list(),
    database.strategies.list(scope),
    store.reads.countByStateSince(new Date(now.getTime() - DAY_MS), scope),
    Promise.all(accounts.map((account) => database.balances.latest(account))),
    store.reads.openOrders(scope),
  ]);
  const [spends, alerts, targets] = await Promise.all([
    Promise.all(strategies.map((record) => spendOf(database, viewOf(record), now))),
    alertsFiringNow(context, now, { control, strategies }, scope),
    readTargets(database, scope, now),
  ]);
  // The kill switch stops every account: a person limited to some does not hold it (src/console/accounts.ts).
  const canOperate = allows(session.person.role, 'operate') && request.scope.accounts === null;
  const killSwitch = control.paused
    ? html`<div class="banner banner-paused"><strong>KILL SWITCH ON</strong>: every cycle is skipped. ${control.reason ?? ''} (by ${control.changedBy ?? '?'}, ${instant(control.changedAt)})
      ${canOperate ? actionButton(session, '/kill-switch/resume', 'Resume all', '/') : ''}</div>`
    : html`<div class="banner banner-running">Running: cycles place orders.
      ${canOperate ? actionButton(session, '/kill-switch/pause', 'Pause all (kill switch)', '/') : ''}</div>`;
  const figures = accounts.map((account, index) =>
    figuresOf(
      balances[index] ?? null,
      spends.filter((s) => s.view.record.account === account),
      open.get(account),
    ),
  );
  const total = totalOf(figures);
  const everyAccount = request.scope.accounts === null && scope.accounts === null;
  const guardLines = spends
    .filter((s) => s.view.minCreditAvailable || s.view.maxCreditUsedPct)
    .map(
      (s) =>
        html`<li>${s.view.record.name} (${s.view.record.account}): ${s.view.minCreditAvailable ? html`needs at least ${money(s.view.minCreditAvailable)} available` : ''}${s.view.maxCreditUsedPct ? html`${s.view.minCreditAvailable ? ',' : ''} at most ${s.view.maxCreditUsedPct.toString()}% used` : ''}</li>`,
    );
  return html`${killSwitch}
<h2>Alerts that fire now</h2>
${alertsPanel(alerts)}
<h2>Last 24 hours</h2>
<div class="cards">${COUNTED.map((state) => html`<div class="card"><b>${counts.get(state) ?? 0}</b>${LABELS[state] ?? state}</div>`)}</div>
<h2>Accounts</h2>
<p>Each account's last balance read, its strategies' spend (today and this month in each strategy's own calendar) and its orders not settled yet.</p>
${table(
  [
    'Account',
    'Fiat balance',
    'Credit available',
    'Credit total',
    'Credit used',
    'Withdrawals',
    'Balance as of',
    'Spent today',
    'Spent this month',
    'Open orders',
    'Open cost',
  ],
  [
    ...accounts.map((account, index) => accountRow(account, figures[index]!)),
    ...(accounts.length > 1
      ? [accountRow(everyAccount ? 'Group total' : 'Total of these accounts', total, true)]
      : []),
  ],
  'You see no account.',
)}
<h2>Spend against budget</h2>
${table(
  ['Strategy', 'Account', 'Today', 'Budget / day', '', 'This month', 'Budget / month', ''],
  spends.map(
    (
      s,
    ) => html`<tr><td><a href="/strategies#${s.view.record.name}">${s.view.record.name}</a></td><td>${s.view.record.account}</td>
<td class="num">${money(s.spentDay)}</td><td class="num">${money(s.view.perDay)}</td><td>${spendBar(`${s.view.record.name} today`, s.spentDay, s.view.perDay)}</td>
<td class="num">${money(s.spentMonth)}</td><td class="num">${money(s.view.perMonth)}</td><td>${spendBar(`${s.view.record.name} this month`, s.spentMonth, s.view.perMonth)}</td></tr>`,
  ),
  'No strategy recorded yet: the worker records them when it loads the strategy files.',
)}
${targetsOverview(targets)}
${guardLines.length > 0 ? html`<h2>Credit guards</h2><ul>${guardLines}</ul>` : ''}
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

function figuresOf(
  balance: BalanceSnapshot | null,
  spends: readonly StrategySpend[],
  open: OpenOrders | undefined,
): AccountFigures {
  return {
    balance,
    spentDay: spends.reduce((sum, s) => sum.plus(s.spentDay), ZERO),
    spentMonth: spends.reduce((sum, s) => sum.plus(s.spentMonth), ZERO),
    open: open ?? { orders: 0, cost: ZERO },
  };
}

/**
 * The accounts' figures added up, exactly. Balances add up over the accounts read so far; the total's
 * "as of" is the oldest of them, and withdrawals are allowed only where every account allows them.
 */
function totalOf(figures: readonly AccountFigures[]): AccountFigures {
  const read = figures.flatMap((f) => (f.balance ? [f.balance] : []));
  const sum = (pick: (b: BalanceSnapshot) => Decimal) => read.reduce((total, b) => total.plus(pick(b)), ZERO);
  const [first] = read;
  const balance: BalanceSnapshot | null = first
    ? {
        ...first,
        fiat: { currency: first.fiat.currency, balance: sum((b) => b.fiat.balance) },
        crypto: { currency: first.crypto.currency, balance: sum((b) => b.crypto.balance) },
        credit: {
          total: sum((b) => b.credit.total),
          used: sum((b) => b.credit.used),
          available: sum((b) => b.credit.available),
        },
        canWithdraw: read.every((b) => b.canWithdraw),
        takenAt: new Date(Math.min(...read.map((b) => b.takenAt.getTime()))),
      }
    : null;
  return {
    balance,
    spentDay: figures.reduce((total, f) => total.plus(f.spentDay), ZERO),
    spentMonth: figures.reduce((total, f) => total.plus(f.spentMonth), ZERO),
    open: {
      orders: figures.reduce((total, f) => total + f.open.orders, 0),
      cost: figures.reduce((total, f) => total.plus(f.open.cost), ZERO),
    },
  };
}

function accountRow(
  label: string,
  { balance, spentDay, spentMonth, open }: AccountFigures,
  total = false,
): Html {
  const used = balance?.credit.total.gt(ZERO)
    ? ` (${balance.credit.used.div(balance.credit.total).times(100).toFixed(1)}%)`
    : '';
  const balanceCells = balance
    ? html`<td class="num">${money(balance.fiat.balance)} ${balance.fiat.currency}</td><td class="num"><strong>${money(balance.credit.available)}</strong></td><td class="num">${money(balance.credit.total)}</td><td class="num">${money(balance.credit.used)}${used}</td><td>${balance.canWithdraw ? 'allowed' : 'BLOCKED'}</td><td>${instant(balance.takenAt)}</td>`
    : html`<td colspan="6" class="empty">No balance read yet.</td>`;
  return html`<tr class="${total ? 'total' : 'account'}"><th scope="row">${label}</th>${balanceCells}<td class="num">${money(spentDay)}</td><td class="num">${money(spentMonth)}</td><td class="num">${open.orders}</td><td class="num">${money(open.cost)}</td></tr>`;
}
