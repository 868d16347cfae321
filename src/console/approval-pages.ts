/**
 * The approvals page (parked cycles with their approve and reject forms, envelopes with theirs and a form to
 * add one) and a cycle's approval record on its detail page. The forms are shown to those whose role allows
 * them; the server checks the role again on every post (src/console/approval-actions.ts).
 */
import { html } from 'hono/html';
import { createApprovalControl } from '../control/index.js';
import type { AccountScope, Cycle, Database, Envelope, ParkedCycle } from '../db/index.js';
import { formatDuration } from '../strategy/index.js';
import { accountFilterForm, accountFilterOf } from './accounts.js';
import type { ConsoleContext, PageRequest } from './context.js';
import { actionButton, csrfField, type Html, instant, money, stateBadge, table } from './layout.js';
import { allows } from './permissions.js';

/** A new envelope's window as the form proposes it: from now, for this long. */
const DEFAULT_ENVELOPE_MS = 30 * 86_400_000;

export async function approvalsPage(context: ConsoleContext, request: PageRequest): Promise<Html> {
  const { database, clock } = context;
  const { session } = request;
  const now = clock();
  const { scope } = accountFilterOf(context, request);
  const control = createApprovalControl(database);
  const [parked, envelopes, strategies] = await Promise.all([
    control.listParked(scope),
    control.listEnvelopes(scope),
    database.strategies.list(scope),
  ]);
  const canApprove = allows(session.person.role, 'approve');
  const parkedRow = (p: ParkedCycle) => {
    const left = p.expiresAt.getTime() - now.getTime();
    const forms = canApprove
      ? html`<form method="post" action="/cycles/${p.cycle.id}/approve" class="approve">${csrfField(session)}<input type="hidden" name="back" value="/approvals">
<label>Max price <input name="maxPrice" inputmode="decimal" size="9" placeholder="${p.defaultMaxPrice.toString()}"></label> <button type="submit">Approve</button></form>
<form method="post" action="/cycles/${p.cycle.id}/reject" class="reject">${csrfField(session)}<input type="hidden" name="back" value="/approvals">
<label>Reason <input name="reason" required maxlength="500" size="16"></label> <button type="submit">Reject</button></form>`
      : '';
    return html`<tr id="cycle-${p.cycle.id}"><td><a href="/cycles/${p.cycle.id}">${p.cycle.id}</a></td><td>${p.cycle.account}</td><td>${p.cycle.strategy}</td><td>${instant(p.cycle.slot)}</td>
<td class="num">${money(p.cycle.amount)}</td><td class="num">${money(p.cycle.totalCost)}</td><td class="num">${p.parkedPrice.toString()}</td>
<td>${decisionSummary(p.cycle)}</td>
<td>${p.approvedBy.length} of ${p.approversRequired}${p.approvedBy.length > 0 ? html`: ${p.approvedBy.join(', ')}` : ''}</td>
<td>${left > 0 ? formatDuration(left) : 'expired'} (${instant(p.expiresAt)})</td><td>${forms}</td></tr>`;
  };
  const envelopeRow = (e: Envelope) => {
    const state = envelopeState(e, now);
    const act = !canApprove
      ? ''
      : html`${state === 'pending' ? actionButton(session, `/envelopes/${e.id}/approve`, 'Approve', '/approvals') : ''}
${e.revokedAt ? '' : actionButton(session, `/envelopes/${e.id}/revoke`, 'Revoke', '/approvals')}`;
    return html`<tr id="envelope-${e.id}"><td>${e.id}</td><td>${e.account}</td><td>${e.strategy}</td>
<td>order ≤ ${money(e.maxOrder)}<br>total ≤ ${money(e.maxTotal)}<br>price ≤ ${e.maxPrice?.toString() ?? 'any'}</td>
<td class="num">${money(e.room)}</td><td class="num">${money(e.spent)}</td>
<td>${instant(e.validFrom)} →<br>${instant(e.validUntil)}</td>
<td>${stateBadge(state)}${e.revokedBy ? html` by ${e.revokedBy}` : ''}</td>
<td>${e.approvedBy.length} of ${e.approversRequired}${e.approvedBy.length > 0 ? html`: ${e.approvedBy.join(', ')}` : ''}<br>created by ${e.createdBy}</td><td>${act}</td></tr>`;
  };
  return html`${accountFilterForm(context, request, '/approvals')}<h2>Parked cycles</h2>
<p>These orders need people: no active envelope covered them. Once the last approval needed is given, a worker buys at a fresh quote whose price is at most the lowest of every approver's maximum, where an approver who names none agrees to the default: the parked price plus the strategy's tolerance.</p>
${table(
  [
    'Cycle',
    'Account',
    'Strategy',
    'Slot',
    'Amount',
    'Cost',
    'Parked price',
    'Decision',
    'Approvals',
    'Time left',
    '',
  ],
  parked.map(parkedRow),
  'No cycle waits for approval.',
)}
<h2>Envelopes</h2>
<p>What the automation may buy without asking. An envelope is active once the strategy's number of people other than its creator approved it.</p>
${table(
  ['Envelope', 'Account', 'Strategy', 'Limits', 'Room left', 'Spent', 'Window', 'State', 'Approvers', ''],
  envelopes.map(envelopeRow),
  'No envelope yet.',
)}
${
  canApprove
    ? html`<h2>Add an envelope</h2>
<form method="post" action="/envelopes" class="envelope">${csrfField(session)}<input type="hidden" name="back" value="/approvals">
<label>Strategy <select name="strategy" required>${strategies.map((s) => html`<option value="${s.name}">${s.name} (${s.account})</option>`)}</select></label>
<label>Max order <input name="maxOrder" inputmode="decimal" required size="10"></label>
<label>Max total <input name="maxTotal" inputmode="decimal" required size="10"></label>
<label>Max price <input name="maxPrice" inputmode="decimal" size="8" placeholder="any"></label>
<label>From <input name="from" required size="22" value="${now.toISOString()}"></label>
<label>Until <input name="until" required size="22" value="${new Date(now.getTime() + DEFAULT_ENVELOPE_MS).toISOString()}"></label>
<button type="submit">Add envelope</button></form>`
    : ''
}`;
}

/** The Attention page's pointer to the parked cycles of the scope's accounts, when there are any. */
export async function waitingApprovalsNote(database: Database, scope: AccountScope): Promise<Html | string> {
  const parked = await database.approvals.listParked(scope);
  if (parked.length === 0) return '';
  return html`<p class="banner">${parked.length} cycle(s) wait for approval: <a href="/approvals">Approvals</a>.</p>`;
}

type EnvelopeState = 'revoked' | 'pending' | 'expired' | 'scheduled' | 'active';

function envelopeState(envelope: Envelope, now: Date): EnvelopeState {
  if (envelope.revokedAt) return 'revoked';
  if (!envelope.activeAt) return 'pending';
  if (envelope.validUntil.getTime() <= now.getTime()) return 'expired';
  if (envelope.validFrom.getTime() > now.getTime()) return 'scheduled';
  return 'active';
}

/** Why the cycle waits: the approval rule's figures, and how the other rules came out. */
function decisionSummary(cycle: Cycle): Html {
  const trace = Array.isArray(cycle.trace) ? (cycle.trace as Record<string, unknown>[]) : [];
  const approval = trace.find((entry) => entry?.rule === 'approval');
  const others = trace.filter((entry) => entry?.rule !== 'approval');
  const passed = others.filter((entry) => entry?.passed).length;
  const detail = (approval?.detail ?? {}) as Record<string, unknown>;
  return html`needs approval (${String(detail.required ?? '?')}${detail.above === undefined ? '' : html` above ${String(detail.above)}`}), ${String(detail.envelope ?? 'no envelope')}; ${passed} of ${others.length} other rules passed`;
}

/** The cycle's approval record on its detail page: empty when it never needed a person or an envelope. */
export async function cycleApprovalSection(
  { database }: ConsoleContext,
  cycle: Cycle,
): Promise<Html | string> {
  const record = await database.approvals.forCycle(cycle.id);
  const charged =
    cycle.envelopeId === null
      ? ''
      : html`<p>Charged to envelope <a href="/approvals#envelope-${cycle.envelopeId}">${cycle.envelopeId}</a>: it fitted, so nobody had to approve it.</p>`;
  if (!record) return charged === '' ? '' : html`<h2>Approval</h2>${charged}`;
  const decision = record.decision
    ? html`${stateBadge(record.decision)} ${instant(record.decidedAt)}${record.decidedBy ? html` by ${record.decidedBy}` : ''}${record.reason ? html`: “${record.reason}”` : ''}`
    : html`waiting (${record.approvals.length} of ${record.approversRequired}), expires ${instant(record.expiresAt)} — <a href="/approvals#cycle-${cycle.id}">approve or reject</a>`;
  return html`<h2>Approval</h2>
${charged}
<table><tbody>
<tr><th>Parked</th><td>${instant(record.parkedAt)} at price ${record.parkedPrice.toString()}, ${record.approversRequired} approval(s) needed</td></tr>
<tr><th>Decision</th><td>${decision}</td></tr>
<tr><th>Maximum price</th><td>${record.approvedMaxPrice ? html`approved at most ${record.approvedMaxPrice.toString()}` : html`the lowest of every approver's maximum; an approver who names none agrees to the default ${record.defaultMaxPrice.toString()}`}</td></tr>
</tbody></table>
${table(
  ['Approved by', 'When', 'Max price named'],
  record.approvals.map(
    (a) =>
      html`<tr><td>${a.person}</td><td>${instant(a.at)}</td><td class="num">${a.maxPrice?.toString() ?? '—'}</td></tr>`,
  ),
  'Nobody approved it.',
)}`;
}
