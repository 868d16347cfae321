/**
 * The pages of the record: strategies (schedule, next slot, last outcome, pause and resume), one cycle's
 * decision trace with its quote, order and settlement timeline, the orders (filtered, paged, charted), and
 * what needs a person (unsure cycles, halted strategies, discrepancies).
 */
import { html } from 'hono/html';
import { type Cycle, SETTLEMENT_STATUSES, type SettlementStatus } from '../db/index.js';
import { cycleApprovalSection } from './approval-pages.js';
import { cumulativeSpendChart, priceChart } from './charts.js';
import type { ConsoleContext, PageRequest } from './context.js';
import { actionButton, type Html, instant, money, stateBadge, table } from './layout.js';
import { allows } from './permissions.js';
import { nextSlotOf, spendOf, viewOf } from './strategy-config.js';

export const ORDERS_PAGE_SIZE = 50;

export class PageNotFound extends Error {
  override readonly name = 'PageNotFound';
}

export async function strategiesPage({ database, store, clock }: ConsoleContext, { session }: PageRequest) {
  const now = clock();
  const records = await database.strategies.list();
  const last = await store.reads.lastCycles(records.map((r) => r.name));
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
    return html`<tr id="${record.name}"><td>${record.name}</td><td>${record.kind}</td><td><code>${view.schedule ?? '—'}</code> ${view.timezone}</td>
<td>${instant(nextSlotOf(view, now))}</td>
<td>${cycle ? html`<a href="/cycles/${cycle.id}">${stateBadge(cycle.state)}</a> ${cycle.reasonCode ?? ''} ${instant(cycle.slot)}` : '—'}</td>
<td>${status}</td><td>${act}</td></tr>`;
  });
  return table(
    ['Strategy', 'Kind', 'Schedule', 'Next slot', 'Last outcome', 'Status', ''],
    rows,
    'No strategy recorded yet.',
  );
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

export async function cyclePage(context: ConsoleContext, _request: PageRequest, id: number): Promise<Html> {
  const { database } = context;
  const cycle = await database.cycles.get(id);
  if (!cycle) throw new PageNotFound(`no cycle with id ${id}`);
  const [quotes, order, approval] = await Promise.all([
    database.quotes.forCycle(id),
    database.orders.forCycle(id),
    cycleApprovalSection(context, cycle),
  ]);
  const history = order ? await database.orders.history(order.id) : [];
  return html`<p>${cycle.strategy}, slot ${instant(cycle.slot)} (${cycle.trigger}): ${stateBadge(cycle.state)} ${cycle.reasonCode ?? ''}
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

function dateParam(text: string | undefined): Date | undefined {
  if (!text) return undefined;
  const at = new Date(text);
  return Number.isNaN(at.getTime()) ? undefined : at;
}

export async function ordersPage(
  { database, store, clock }: ConsoleContext,
  { query }: PageRequest,
): Promise<Html> {
  const strategy = query.strategy || undefined;
  const status =
    query.status && STATUS_SET.has(query.status) ? (query.status as SettlementStatus) : undefined;
  const from = dateParam(query.from);
  const until = dateParam(query.until);
  const beforeId = query.before && /^\d{1,15}$/.test(query.before) ? Number(query.before) : undefined;
  const [rows, strategies] = await Promise.all([
    store.reads.listOrders({ strategy, status, from, until, beforeId, limit: ORDERS_PAGE_SIZE }),
    database.strategies.list(),
  ]);
  const keep = new URLSearchParams(
    Object.entries({ strategy, status, from: query.from, until: query.until }).filter(
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
      spend.month.start,
      spend.month.end,
    );
    spendChart = html`<h2>Cumulative spend this month</h2>${cumulativeSpendChart(points, spend.view.perMonth, spend.month.start, spend.month.end)}`;
  }
  return html`<form method="get" action="/orders" class="filters">
<label>Strategy <select name="strategy"><option value="">all</option>${strategies.map((s) => html`<option value="${s.name}" ${s.name === strategy ? 'selected' : ''}>${s.name}</option>`)}</select></label>
<label>State <select name="status"><option value="">all</option>${SETTLEMENT_STATUSES.map((s) => html`<option value="${s}" ${s === status ? 'selected' : ''}>${s}</option>`)}</select></label>
<label>From <input type="date" name="from" value="${query.from ?? ''}"></label>
<label>Until <input type="date" name="until" value="${query.until ?? ''}"></label>
<button type="submit">Filter</button></form>
<h2>Price paid per order (this page)</h2>
${priceChart(rows.map((o) => ({ at: o.serviceTimestamp, price: o.price })))}
${spendChart}
${table(
  ['Order', 'Strategy', 'Cycle', 'When', 'Amount', 'Price', 'State'],
  rows.map(
    (
      o,
    ) => html`<tr><td><code>${o.serviceOrderId}</code></td><td>${o.strategy ?? o.origin}</td><td>${o.cycleId ? html`<a href="/cycles/${o.cycleId}">${o.cycleId}</a>` : '—'}</td>
<td>${instant(o.serviceTimestamp)}</td><td class="num">${money(o.amount)}</td><td class="num">${o.price.toString()}</td><td>${stateBadge(o.status)}</td></tr>`,
  ),
  'No order matches.',
)}
${next ? html`<p><a href="${next}">Older orders →</a></p>` : ''}`;
}

const cycleRow = (cycle: Cycle, action: Html | string) =>
  html`<tr><td><a href="/cycles/${cycle.id}">${cycle.id}</a></td><td>${cycle.strategy}</td><td>${instant(cycle.slot)}</td><td>${stateBadge(cycle.state)} ${cycle.reasonCode ?? ''} ${cycle.errorMessage ?? ''}</td><td>${action}</td></tr>`;

export async function attentionPage({ database }: ConsoleContext, { session }: PageRequest): Promise<Html> {
  const [unsure, halted, flagged] = await Promise.all([
    database.cycles.listByState('unsure', 200),
    database.strategies.listHalted(),
    database.cycles.listWithDiscrepancy(100),
  ]);
  const canOperate = allows(session.person.role, 'operate');
  return html`<h2>Unsure cycles</h2>
<p>The worker could not tell whether these orders were placed. If the service has the order, adopt it with <code>treasury-bot resolve CYCLE_ID --order SERVICE_ORDER_ID</code>; if you checked that it has none, declare it not placed here.</p>
${table(
  ['Cycle', 'Strategy', 'Slot', 'State', ''],
  unsure.map((c) =>
    cycleRow(
      c,
      canOperate
        ? actionButton(session, `/cycles/${c.id}/not-placed`, 'Declare not placed', '/attention')
        : '',
    ),
  ),
  'No unsure cycle.',
)}
<h2>Halted strategies</h2>
${table(
  ['Strategy', 'Since', 'Reason', ''],
  halted.map(
    (s) =>
      html`<tr><td>${s.name}</td><td>${instant(s.haltedAt)}</td><td>${s.haltReason ?? ''}</td><td>${canOperate ? actionButton(session, `/strategies/${encodeURIComponent(s.name)}/resume`, 'Resume', '/attention') : ''}</td></tr>`,
  ),
  'No halted strategy.',
)}
<h2>Discrepancies</h2>
${table(
  ['Cycle', 'Strategy', 'Slot', 'State', ''],
  flagged.map((c) => cycleRow(c, '')),
  'No discrepancy.',
)}`;
}
