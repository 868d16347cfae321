import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APPROVAL_ACTIONS } from '../../src/console/approval-actions.js';
import { allows } from '../../src/console/permissions.js';
import { type ApprovalControl, createApprovalControl } from '../../src/control/index.js';
import { EVERY_ACCOUNT, openConsoleStore, ROLES, type Role } from '../../src/db/index.js';
import { recordStrategiesSeen } from '../../src/engine/index.js';
import type { DcaStrategy } from '../../src/strategy/index.js';
import { d, type EngineBench, freshSlot, startEngineBench, strategy } from '../engine/support/harness.js';
import { type ConsoleClient, loggedIn, type RunningConsole, startTestConsole } from './support.js';

/** Every order of it needs one person, or an envelope. */
const GUARDED: DcaStrategy = strategy({
  name: 'console-approval',
  approval: { required: 'always', approvers: 1, timeoutMs: 3_600_000, priceTolerancePct: d('0.5') },
});
const INJECTED = '<img src=x onerror="window.injected=1">no';

/**
 * The approvals pages over HTTP, on cycles parked by real engine cycles against the sandbox: every role
 * against every approval action (allowed ones audited with the logged-in person, the rest refused with 403
 * and nothing changed, even when forged by hand), the CSRF token and the session required, the domain's
 * refusals (one's own envelope, a decided cycle) and malformed forms shown as 4xx pages naming the field,
 * and the approval record on the cycle's page.
 */
describe('console approvals', () => {
  let console: RunningConsole;
  let bench: EngineBench;
  let control: ApprovalControl;
  const clients = new Map<Role, ConsoleClient>();
  let people = 0;

  async function parkedCycle(): Promise<number> {
    const report = await bench.run(GUARDED, freshSlot());
    expect(report.outcome).toBe('awaiting-approval');
    return (await bench.database.cycles.getBySlot(GUARDED.name, new Date(report.slot)))!.id;
  }

  /** An envelope created by someone else, waiting for its one approval. */
  async function pendingEnvelope(): Promise<number> {
    const creator = `creator-${people++}`;
    await openConsoleStore(bench.database).people.add(
      { name: creator, role: 'approver', passwordHash: 'unused' },
      'test',
    );
    const envelope = await control.addEnvelope(
      {
        strategy: GUARDED.name,
        maxOrder: d('10.00'),
        maxTotal: d('20.00'),
        maxPrice: null,
        validFrom: new Date(Date.now() - 60_000),
        validUntil: new Date(Date.now() + 3_600_000),
      },
      creator,
    );
    return envelope.id;
  }

  async function attempt(path: string): Promise<{ path: string; form: Record<string, string> }> {
    switch (path) {
      case '/cycles/:id/approve':
        return { path: path.replace(':id', String(await parkedCycle())), form: { maxPrice: '' } };
      case '/cycles/:id/reject':
        return { path: path.replace(':id', String(await parkedCycle())), form: { reason: 'not now' } };
      case '/envelopes':
        return {
          path,
          form: {
            strategy: GUARDED.name,
            maxOrder: '10.00',
            maxTotal: '20.00',
            maxPrice: '',
            from: '2030-01-01',
            until: '2030-02-01T00:00:00Z',
          },
        };
      case '/envelopes/:id/approve':
      case '/envelopes/:id/revoke':
        return { path: path.replace(':id', String(await pendingEnvelope())), form: {} };
      default:
        throw new Error(`no attempt for ${path}`);
    }
  }

  async function lastAuditId(): Promise<number> {
    return (await console.store.audit.list({ limit: 1 }))[0]?.id ?? 0;
  }

  beforeAll(async () => {
    console = await startTestConsole();
    bench = await startEngineBench({ test: console.test });
    control = createApprovalControl(bench.database);
    await recordStrategiesSeen(bench.context, [GUARDED]);
    for (const role of ROLES) clients.set(role, await loggedIn(console, role));
  }, 60_000);

  afterAll(async () => {
    await bench?.close();
    await console?.close();
  });

  it('gives approving to approvers and admins only', () => {
    expect(APPROVAL_ACTIONS.map((a) => [a.path, a.permission])).toEqual([
      ['/cycles/:id/approve', 'approve'],
      ['/cycles/:id/reject', 'approve'],
      ['/envelopes', 'approve'],
      ['/envelopes/:id/approve', 'approve'],
      ['/envelopes/:id/revoke', 'approve'],
    ]);
    expect(ROLES.filter((role) => allows(role, 'approve'))).toEqual(['approver', 'admin']);
  });

  const cases = ROLES.flatMap((role) => APPROVAL_ACTIONS.map((action) => ({ role, action })));
  it.each(cases)('$role → $action.path', async ({ role, action }) => {
    const client = clients.get(role)!;
    const { path, form } = await attempt(action.path);
    const csrf = await client.csrfFrom('/approvals');
    const before = await lastAuditId();
    const answer = await client.post(path, { ...form, _csrf: csrf, back: '/approvals' });
    const [latest] = await console.store.audit.list({ limit: 1 });
    if (allows(role, action.permission)) {
      expect(answer.status, answer.body).toBe(303);
      expect(answer.location).toBe('/approvals');
      expect(latest).toMatchObject({ actor: role });
      expect(latest!.id).toBeGreaterThan(before);
    } else {
      expect(answer.status).toBe(403);
      expect(answer.body).toContain(`a ${role} may not do this`);
      expect(latest?.id ?? 0).toBe(before);
    }
  });

  it('refuses every approval action without a session (401) or without its CSRF token (403)', async () => {
    const approver = clients.get('approver')!;
    for (const action of APPROVAL_ACTIONS) {
      const { path, form } = await attempt(action.path);
      const before = await lastAuditId();
      const anonymous = await fetch(`${console.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ ...form, _csrf: await approver.csrfFrom('/approvals') }).toString(),
        redirect: 'manual',
      });
      expect(anonymous.status, path).toBe(401);
      const noToken = await approver.post(path, form);
      expect(noToken.status, path).toBe(403);
      expect(noToken.body).toContain('CSRF');
      expect(await lastAuditId(), path).toBe(before);
    }
  });

  it('approves a parked cycle as the logged-in person, with the maximum price named', async () => {
    const id = await parkedCycle();
    const approver = clients.get('approver')!;
    const answer = await approver.post(`/cycles/${id}/approve`, {
      _csrf: await approver.csrfFrom('/approvals'),
      maxPrice: '5.4100',
      back: '/approvals',
    });
    expect(answer.status, answer.body).toBe(303);
    const record = await bench.database.approvals.forCycle(id);
    expect(record).toMatchObject({ decision: 'approved', decidedBy: 'approver' });
    expect(record?.approvedMaxPrice?.toString()).toBe('5.41');
    const page = await clients.get('viewer')!.get(`/cycles/${id}`);
    expect(page.body).toContain('<h2>Approval</h2>');
    expect(page.body).toMatch(/approved<\/span> <time[^>]*>[^<]*<\/time> by approver/);
    expect(page.body).toContain('approved at most 5.41');
  });

  it("shows the domain's refusals as 409 pages: one's own envelope, a cycle already decided", async () => {
    const approver = clients.get('approver')!;
    const admin = clients.get('admin')!;
    const add = await approver.post('/envelopes', {
      ...(await attempt('/envelopes')).form,
      _csrf: await approver.csrfFrom('/approvals'),
    });
    expect(add.status, add.body).toBe(303);
    const [own] = await control.listEnvelopes(EVERY_ACCOUNT);
    expect(own).toMatchObject({ createdBy: 'approver', activeAt: null });
    const before = await lastAuditId();
    const refused = await approver.post(`/envelopes/${own!.id}/approve`, {
      _csrf: await approver.csrfFrom('/approvals'),
    });
    expect(refused.status).toBe(409);
    expect(refused.body).toContain(`approver created envelope ${own!.id} and cannot approve it`);
    expect(refused.body).not.toMatch(/at .*\.ts:\d+/);
    expect(await lastAuditId()).toBe(before);
    // Another person may.
    const approved = await admin.post(`/envelopes/${own!.id}/approve`, {
      _csrf: await admin.csrfFrom('/approvals'),
    });
    expect(approved.status, approved.body).toBe(303);

    const id = await parkedCycle();
    await approver.post(`/cycles/${id}/reject`, {
      _csrf: await approver.csrfFrom('/approvals'),
      reason: 'over the quarter',
    });
    const late = await admin.post(`/cycles/${id}/approve`, { _csrf: await admin.csrfFrom('/approvals') });
    expect(late.status).toBe(409);
    expect(late.body).toContain(`cycle ${id} no longer waits for approval: it was rejected by approver`);
  });

  it('refuses malformed forms with the field named, changing nothing', async () => {
    const approver = clients.get('approver')!;
    const id = await parkedCycle();
    const envelope = (await attempt('/envelopes')).form;
    const tries: [string, Record<string, string>, number, string][] = [
      [`/cycles/${id}/approve`, { maxPrice: '1,5' }, 400, 'maxPrice: expected decimal text'],
      [`/cycles/${id}/approve`, { maxPrice: '0' }, 400, 'the maximum price must be above 0'],
      [`/cycles/${id}/reject`, { reason: '   ' }, 400, 'reason: a rejection needs a reason'],
      ['/cycles/999999999/approve', {}, 404, 'no cycle with id 999999999'],
      ['/cycles/abc/reject', { reason: 'x' }, 400, 'cycle: &quot;abc&quot; is not a cycle id'],
      ['/envelopes/999999999/approve', {}, 404, 'no envelope with id 999999999'],
      ['/envelopes', { ...envelope, maxOrder: '' }, 400, 'maxOrder: required'],
      ['/envelopes', { ...envelope, maxTotal: '1e3' }, 400, 'maxTotal: expected decimal text'],
      ['/envelopes', { ...envelope, maxTotal: '5.00' }, 400, 'the max total 5 is below the max order 10'],
      ['/envelopes', { ...envelope, from: '2030-01-01T10:00' }, 400, 'from: expected an ISO 8601'],
      ['/envelopes', { ...envelope, until: '2029-01-01' }, 400, 'the envelope must end after it starts'],
      // A strategy not recorded is not found, as another account's is (test/console/accounts.test.ts).
      ['/envelopes', { ...envelope, strategy: 'nope' }, 404, 'no strategy named &quot;nope&quot;'],
    ];
    for (const [path, form, status, message] of tries) {
      const before = await lastAuditId();
      const answer = await approver.post(path, { ...form, _csrf: await approver.csrfFrom('/approvals') });
      expect(answer.status, `${path} ${JSON.stringify(form)}`).toBe(status);
      expect(answer.body).toContain(message);
      expect(await lastAuditId()).toBe(before);
    }
    expect((await bench.database.cycles.get(id))?.state).toBe('awaiting_approval');
  });

  it('shows the forms to those who may approve, the same tables to everyone else', async () => {
    const id = await parkedCycle();
    for (const role of ROLES) {
      const page = await clients.get(role)!.get('/approvals');
      expect(page.status).toBe(200);
      expect(page.body).toContain(`<a href="/cycles/${id}">${id}</a>`);
      expect(page.body).toContain('<a href="/approvals">Approvals</a>');
      const forms = page.body.includes(`action="/cycles/${id}/approve"`);
      expect(forms, role).toBe(allows(role, 'approve'));
      expect(page.body.includes('action="/envelopes"'), role).toBe(allows(role, 'approve'));
    }
    const overview = await clients.get('viewer')!.get('/');
    const parked = (await control.listParked(EVERY_ACCOUNT)).length;
    expect(overview.body).toContain(`<div class="card"><b>${parked}</b>parked</div>`);
    const attention = await clients.get('operator')!.get('/attention');
    expect(attention.body).toContain(
      `${parked} cycle(s) wait for approval: <a href="/approvals">Approvals</a>`,
    );
  });

  it('renders an injected rejection reason as text, and the envelope a cycle was charged to', async () => {
    const id = await parkedCycle();
    const approver = clients.get('approver')!;
    await approver.post(`/cycles/${id}/reject`, {
      _csrf: await approver.csrfFrom('/approvals'),
      reason: INJECTED,
    });
    const rejected = await approver.get(`/cycles/${id}`);
    expect(rejected.body).not.toContain(INJECTED);
    expect(rejected.body).toContain('&lt;img src=x onerror=&quot;window.injected=1&quot;&gt;no');

    await control.approveEnvelope(await pendingEnvelope(), 'approver');
    // A small order fits an active envelope (this one, or one the role tests activated).
    const report = await bench.run(strategy({ ...GUARDED, amount: d('1.00') }), freshSlot());
    expect(report.outcome).toBe('placed');
    const charged = await bench.database.cycles.getBySlot(GUARDED.name, new Date(report.slot));
    const envelope = charged?.envelopeId;
    expect(envelope).toBeTypeOf('number');
    const page = await approver.get(`/cycles/${charged!.id}`);
    expect(page.body).toContain(
      `Charged to envelope <a href="/approvals#envelope-${envelope}">${envelope}</a>`,
    );
    expect(page.body).not.toContain('Approved by');
  });
});
