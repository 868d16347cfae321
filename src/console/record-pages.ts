/**
 * The pages of the record: strategies (schedule, next slot, last outcome, pause and resume, each target's
 * configuration and standing), one cycle's decision trace with its quote, order and settlement timeline, the
 * orders (filtered, paged, charted), and what needs a person (unsure cycles, halted strategies,
 * discrepancies). Every list reads through the request's account scope, narrowed by its account filter, and
 * names each row's account.
 */
import { html } from 'hono/html';
import { readTargets } from '../control/index.js';
import {
  type ConsoleSession,
  type Cycle,
  type OrderRecord,
  orderSubject,
  SETTLEMENT_STATUSES,
  type SettlementStatus,
} from '../db/index.js';
import { accountField, accountFilterForm, accountFilterOf, requireVisible } from './accounts.js';
import { cycleApprovalSection, waitingApprovalsNote } from './approval-pages.js';
import { cumulativeSpendChart, priceChart } from './charts.js';
import { type ConsoleContext, ConsoleInputError, PageNotFound, type PageRequest } from './context.js';
import { actionButton, csrfField, type Html, instant, money, stateBadge, table } from './layout.js';
import { allows } from './permissions.js';
import { nextSlotOf, spendOf, viewOf } from './strategy-config.js';
import { targetAnchor, targetSections } from './targets.js';

export const ORDERS_PAGE_SIZE = 50;

export async function strategiesPage(context: ConsoleContext, request: PageRequest) {
  const { database, store, clock } = context;
  const { session } = request;
  const now = clock();
  const { scope } = accountFilterOf(context, request);
  const [records, targets] = await Promise.all([
    database.strategies.list(scope),
    readTargets(database, scope, now),
  ]);
  const last = await store.reads.lastCycles(
    records.map((r) => r.name),
    scope,
  );
  const windows = new Map(targets.map((target) => [target.name, target.window]));
  const canOperate = allows(session.person.role, 'operate');
  const rows = records.map((record) => {
    const view = viewOf(record);
    const cycle = last.get(record.name);
    const status = record.haltedAt
      ? html`<strong>halted</strong> since ${instant(record.haltedAt)}: ${record.haltReason ?? ''}`
      : view.enabled
        ? html`enabled`
        : html`disabled in its file`;
    const act = !canOperate
      ? ''
      : record.haltedAt
        ? actionButton(
            session,
            `/strategies/${encodeURIComponent(record.name)}/resume`,
            'Resume',
            '/strategies',
          )
        : actionButton(
            session,
            `/strategies/${encodeURIComponent(record.name)}/pause`,
            'Pause',
            '/strategies',
          );
    const window = windows.get(record.name);
    const kind = window ? html`<a href="#${targetAnchor(record.name)}">${record.kind}</a>` : record.kind;
    return html`<tr id="${record.name}"><td>${record.name}</td><td>${record.account}</td><td>${kind}</td><td><code>${view.schedule ?? '—'}</code> ${view.timezone}</td>
<td>${instant(nextSlotOf(view, now, window))}</td>
<td>${cycle ? html`<a href="/cycles/${cycle.id}">${stateBadge(cycle.state)}</a> ${cycle.reasonCode ?? ''} ${instant(cycle.slot)}` : '—'}</td>
<td>${status}</td><td>${act}</td></tr>`;
  });
  return html`${accountFilterForm(context, request, '/strategies')}
${table(
  ['Strategy', 'Account', 'Kind', 'Schedule', 'Next slot', 'Last outcome', 'Status', ''],
  rows,
  'No strategy recorded yet.',
)}
${targetSections(targets)}`;
}

function traceTable(trace: unknown): Html {
  if (!Array.isArray(trace) || trace.length === 0) return html`<p class="empty">No rule was evaluated.</p>`;
  return table(
    ['Rule', 'Result', 'Figures'],
    trace.map((entry) => {
      const { rule, passed, reason, detail } = (entry ?? {}) as Record<string, unknown>;
      const figures =
        detail && typeof detail === 'object' ? Object.entries(detail as Record<string, unknown>) : [];
      return html`<tr><td>${String(rule)}</td><td>${stateBadge(passed ? 'pass' : 'fail')} ${reason ? String(reason) : ''}</td>
<td>${figures.map(([key, value]) => html`${key} = <code>${String(value)}</code><br>`)}</td></tr>`;
    }),
    '',
  );
}

export async function cyclePage(context: ConsoleContext, request: PageRequest, id: number): Promise<Html> {
  const { database } = context;
  const cycle = await database.cycles.get(id);
  if (!cycle) throw new PageNotFound(`no cycle with id ${id}`);
  requireVisible(request.scope, cycle.account, `no cycle with id ${id}`);
  const [quotes, order, approval] = await Promise.all([
    database.quotes.forCycle(id),
    database.orders.forCycle(id),
    cycleApprovalSection(context, cycle),
  ]);
  const history = order ? await database.orders.history(order.id) : [];
  return html`<p>${cycle.strategy} (account ${cycle.account}), slot ${instant(cycle.slot)} (${cycle.trigger}): ${stateBadge(cycle.state)} ${cycle.reasonCode ?? ''}
${cycle.errorCode ? html`<br>error ${cycle.errorCode}: ${cycle.errorMessage ?? ''}` : ''}</p>
<h2>Inputs</h2>
<table><tbody>
<tr><th>Claimed</th><td>${instant(cycle.claimedAt)} by ${cycle.owner}</td></tr>
<tr><th>Order request sent</th><td>${instant(cycle.submittedAt)} (${cycle.attempts} attempt(s))</td></tr>
<tr><th>Finished</th><td>${instant(cycle.finishedAt)}</td></tr>
<tr><th>Amount / price / total cost</th><td>${money(cycle.amount)} / ${cycle.price?.toString() ?? '—'} / ${money(cycle.totalCost)}</td></tr>
</tbody></table>
<h2>Decision trace</h2>
${traceTable(cycle.trace)}
${approval}
${
  cycle.discrepancy
    ? html`<h2>Discrepancy</h2>${table(
        ['Field', 'Expected', 'Service says'],
        cycle.discrepancy.map(
          (d) => html`<tr><td>${d.field}</td><td>${d.expected}</td><td>${d.got}</td></tr>`,
        ),
        '',
      )}`
    : ''
}
<h2>Quotes</h2>
${table(
  ['Quote', 'Price', 'Amount', 'Total cost', 'Received', 'Deadline'],
  quotes.map(
    (q) =>
      html`<tr><td>${q.quoteId}</td><td class="num">${q.price.toString()}</td><td class="num">${money(q.amount)}</td><td class="num">${money(q.totalCost)}</td><td>${instant(q.receivedAt)}</td><td>${instant(q.deadlineAt)}</td></tr>`,
  ),
  'No quote was requested.',
)}
<h2>Order and settlement</h2>
${
  order
    ? html`<p>Order <code>${order.serviceOrderId}</code>: ${money(order.amount)} ${order.symbol} at ${order.price.toString()}, ${stateBadge(order.status)}${order.settledAt ? html` settled ${instant(order.settledAt)}` : ''}</p>
${table(
  ['When', 'Move', 'Source', 'Expected', 'Received', 'Withdrawn', 'Withdrawal'],
  history.map((event) => {
    const withdrawal = (event.withdrawal ?? {}) as Record<string, unknown>;
    return html`<tr><td>${instant(event.recordedAt)}</td><td>${event.fromStatus ?? '·'} → ${stateBadge(event.toStatus)}</td><td>${event.source}</td>
<td class="num">${event.expectedAmount?.toString() ?? ''}</td><td class="num">${event.receivedAmount?.toString() ?? ''}</td><td class="num">${event.withdrawnAmount?.toString() ?? ''}</td>
<td>${event.withdrawal ? html`network ${String(withdrawal.network ?? '—')}, tx <code>${String(withdrawal.transactionId ?? '—')}</code>, amount ${String(withdrawal.amount ?? '—')}` : ''}${event.anomaly ? html` <strong>${event.anomaly}</strong>` : ''}</td></tr>`;
  }),
  'No settlement step recorded yet.',
)}`
    : html`<p class="empty">No order.</p>`
}`;
}

const STATUS_SET = new Set<string>(SETTLEMENT_STATUSES);

function dateParam(field: string, text: string | undefined): Date | undefined {
  if (!text) return undefined;
  const at = new Date(text);
  if (Number.isNaN(at.getTime()))
    throw new ConsoleInputError(`${field}: "${text}" is not a date (2026-03-01)`);
  return at;
}

/**
 * The orders page's filters, read the same way for the page and for its CSV download; a value that is not
 * one is refused (a download must not quietly widen to every order).
 */
export function orderFiltersOf(context: ConsoleContext, request: PageRequest) {
  const { query } = request;
  if (query.status && !STATUS_SET.has(query.status)) {
    throw new ConsoleInputError(`status: "${query.status}" is not one of ${SETTLEMENT_STATUSES.join(', ')}`);
  }
  const from = dateParam('from', query.from);
  const until = dateParam('until', query.until);
  if (from && until && from.getTime() >= until.getTime()) {
    throw new ConsoleInputError(`from (${query.from}) must be before until (${query.until})`);
  }
  return {
    ...accountFilterOf(context, request),
    strategy: query.strategy || undefined,
    status: (query.status || undefined) as SettlementStatus | undefined,
    from,
    until,
  };
}

export async function ordersPage(context: ConsoleContext, request: PageRequest): Promise<Html> {
  const { database, store, clock } = context;
  const { query } = request;
  const { account, scope, strategy, status, from, until } = orderFiltersOf(context, request);
  const beforeId = query.before && /^\d{1,15}$/.test(query.before) ? Number(query.before) : undefined;
  const [rows, strategies] = await Promise.all([
    store.reads.listOrders({ scope, strategy, status, from, until, beforeId, limit: ORDERS_PAGE_SIZE }),
    database.strategies.list(scope),
  ]);
  const keep = new URLSearchParams(
    Object.entries({ account, strategy, status, from: query.from, until: query.until }).filter(
      (entry): entry is [string, string] => Boolean(entry[1]),
    ),
  );
  const last = rows.at(-1);
  const next =
    rows.length === ORDERS_PAGE_SIZE && last ? `/orders?${keep.toString()}&before=${last.id}` : null;
  const chosen = strategy ? strategies.find((s) => s.name === strategy) : undefined;
  let spendChart: Html | string = '';
  if (chosen) {
    const spend = await spendOf(database, viewOf(chosen), clock());
    const points = await store.reads.spendPoints(
      chosen.name,
      spend.view.timezone,
      { from: spend.month.start, until: spend.month.end },
      scope,
    );
    spendChart = html`<h2>Cumulative spend this month</h2>${cumulativeSpendChart(points, spend.view.perMonth, spend.month.start, spend.month.end)}`;
  }
  return html`<form method="get" action="/orders" class="filters">
${accountField(context, request)}
<label>Strategy <select name="strategy"><option value="">all</option>${strategies.map((s) => html`<option value="${s.name}" ${s.name === strategy ? 'selected' : ''}>${s.name}</option>`)}</select></label>
<label>State <select name="status"><option value="">all</option>${SETTLEMENT_STATUSES.map((s) => html`<option value="${s}" ${s === status ? 'selected' : ''}>${s}</option>`)}</select></label>
<label>From <input type="date" name="from" value="${query.from ?? ''}"></label>
<label>Until <input type="date" name="until" value="${query.until ?? ''}"></label>
<button type="submit">Filter</button></form>
<p><a href="/orders.csv${keep.size > 0 ? `?${keep.toString()}` : ''}" download>Download every order matching these filters (CSV)</a>: the ledger file of <code>treasury-bot export orders</code>, all pages.</p>
<h2>Price paid per order (this page)</h2>
${priceChart(rows.map((o) => ({ at: o.serviceTimestamp, price: o.price })))}
${spendChart}
${table(
  ['Order', 'Account', 'Strategy', 'Cycle', 'When', 'Amount', 'Price', 'State'],
  rows.map(
    (
      o,
    ) => html`<tr><td><code>${o.serviceOrderId}</code></td><td>${o.account}</td><td>${o.strategy ?? o.origin}</td><td>${o.cycleId ? html`<a href="/cycles/${o.cycleId}">${o.cycleId}</a>` : '—'}</td>
<td>${instant(o.serviceTimestamp)}</td><td class="num">${money(o.amount)}</td><td class="num">${o.price.toString()}</td><td>${stateBadge(o.status)}</td></tr>`,
  ),
  'No order matches.',
)}
${next ? html`<p><a href="${next}">Older orders →</a></p>` : ''}`;
}

const cycleCells = (cycle: Cycle) =>
  html`<td><a href="/cycles/${cycle.id}">${cycle.id}</a></td><td>${cycle.account}</td><td>${cycle.strategy}</td><td>${instant(cycle.slot)}</td>`;

/** The operator's two decisions on an unsure cycle, as `treasury-bot resolve` takes them. */
function resolveForms(session: ConsoleSession, cycle: Cycle): Html {
  return html`<form method="post" action="/cycles/${cycle.id}/adopt" class="inline">${csrfField(session)}<input type="hidden" name="back" value="/attention">
<label>Service order <input name="order" required pattern="[A-Za-z0-9_-]{1,64}" size="14" aria-label="service order id of cycle ${cycle.id}"></label>
<button type="submit">Adopt order</button></form>
${actionButton(session, `/cycles/${cycle.id}/not-placed`, 'Declare not placed', '/attention')}`;
}

/** Orders the service has that no cycle of ours placed: at most this many of the newest. */
const EXTERNAL_SHOWN = 50;

export async function attentionPage(context: ConsoleContext, request: PageRequest): Promise<Html> {
  const { database, store } = context;
  const { session } = request;
  const { scope } = accountFilterOf(context, request);
  const [waiting, unsure, halted, flagged, external] = await Promise.all([
    waitingApprovalsNote(database, scope),
    database.cycles.listByState(scope, 'unsure', 200),
    database.strategies.listHalted(scope),
    database.cycles.listWithDiscrepancy(scope, 100),
    store.reads.listOrders({ scope, origin: 'external', limit: EXTERNAL_SHOWN }),
  ]);
  const canOperate = allows(session.person.role, 'operate');
  const acknowledged = await store.reads.acknowledgements(external);
  const acknowledgement = (order: OrderRecord) => {
    const done = acknowledged.get(orderSubject(order.account, order.serviceOrderId));
    if (done) return html`acknowledged by ${done.actor}, ${instant(done.at)}`;
    if (!canOperate) return html`<strong>not acknowledged</strong>`;
    return html`<form method="post" action="/orders/${encodeURIComponent(order.serviceOrderId)}/acknowledge" class="inline">${csrfField(session)}<input type="hidden" name="back" value="/attention"><input type="hidden" name="account" value="${order.account}">
<input name="note" maxlength="500" size="18" placeholder="whose order (optional)" aria-label="note on order ${order.serviceOrderId}"><button type="submit">Acknowledge</button></form>`;
  };
  return html`${accountFilterForm(context, request, '/attention')}${waiting}<h2>Unsure cycles</h2>
<p>The worker could not tell whether these orders were placed. If the service has the cycle's order (an
external order below, or one named in its strategy's halt reason), adopt it by the service's order id: it is
read from the service and recorded as this cycle's. If you checked that the service has none, declare it not
placed. Each decision goes to the audit log with your name.</p>
${table(
  ['Cycle', 'Account', 'Strategy', 'Slot', 'Quote', 'Amount', 'State', ''],
  unsure.map(
    (c) =>
      html`<tr>${cycleCells(c)}<td><code>${c.quoteId ?? '—'}</code></td><td class="num">${money(c.amount)}</td><td>${stateBadge(c.state)} ${c.reasonCode ?? ''} ${c.errorMessage ?? ''}</td><td>${canOperate ? resolveForms(session, c) : ''}</td></tr>`,
  ),
  'No unsure cycle.',
)}
<h2>Halted strategies</h2>
${table(
  ['Strategy', 'Account', 'Since', 'Reason', ''],
  halted.map(
    (s) =>
      html`<tr><td>${s.name}</td><td>${s.account}</td><td>${instant(s.haltedAt)}</td><td>${s.haltReason ?? ''}</td><td>${canOperate ? actionButton(session, `/strategies/${encodeURIComponent(s.name)}/resume`, 'Resume', '/attention') : ''}</td></tr>`,
  ),
  'No halted strategy.',
)}
<h2>Discrepancies</h2>
<p>Orders of ours that the service reports with figures other than asked and quoted. They are recorded as the
service has them, and their strategy is halted until someone resumes it.</p>
${table(
  ['Cycle', 'Account', 'Strategy', 'Slot', 'Order', 'Field', 'Expected', 'Service says'],
  flagged.map(
    (c) =>
      html`<tr>${cycleCells(c)}<td><code>${c.serviceOrderId ?? '—'}</code></td>${differenceCells(c)}</tr>`,
  ),
  'No discrepancy.',
)}
<h2>External orders</h2>
<p>Orders the service has that no cycle placed (by hand, or by another system on the account), booked as
external so that the books hold every order. If one is an unsure cycle's, adopt it above (it then leaves this
list); if it is known to you, acknowledge it (the audit log keeps who and when).</p>
${table(
  ['Order', 'Account', 'When', 'Symbol', 'Amount', 'Price', 'State', ''],
  external.map(
    (o) =>
      html`<tr><td><code>${o.serviceOrderId}</code></td><td>${o.account}</td><td>${instant(o.serviceTimestamp)}</td><td>${o.symbol}</td><td class="num">${money(o.amount)}</td><td class="num">${o.price.toString()}</td><td>${stateBadge(o.status)}</td><td>${acknowledgement(o)}</td></tr>`,
  ),
  'No external order.',
)}`;
}

function differenceCells(cycle: Cycle): Html {
  const differences = cycle.discrepancy ?? [];
  const column = (pick: (d: (typeof differences)[number]) => string) =>
    html`<td>${differences.map((d) => html`${pick(d)}<br>`)}</td>`;
  return html`${column((d) => d.field)}${column((d) => d.expected)}${column((d) => d.got)}`;
}
