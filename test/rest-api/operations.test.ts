import { compileErrors, validate } from '@readme/openapi-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPurchaseClient } from '../../src/api/index.js';
import { allows } from '../../src/console/permissions.js';
import { ROLES } from '../../src/db/index.js';
import type { ReloadResult } from '../../src/engine/index.js';
import { Decimal } from '../../src/money.js';
import { testBackends } from '../support/database.js';
import { accountToken, type RunningApi, startApi } from './support.js';

const STRATEGIES = `name: api-dca
account: northco
kind: dca
symbol: USDTBRL
amount: "100.00"
schedule: "0 0 1 1 *"
timezone: UTC
enabled: false
---
name: api-parked
account: northco
kind: dca
symbol: USDTBRL
amount: "100.00"
schedule: "0 0 1 1 *"
timezone: UTC
enabled: false
approval:
  required: always
  approvers: 1
  timeout: 2h
---
name: api-south
account: southco
kind: dca
symbol: USDTBRL
amount: "50.00"
schedule: "0 0 1 1 *"
timezone: UTC
enabled: false
`;

/** Changes wait for people, and reconciliation stays away from the unsure cycles the tests settle by hand. */
const SETTINGS = `strategies:
  changes: approve
engine:
  reload:
    watch: false
  reconcile:
    intervalMs: 3600000
`;

/**
 * Every operation of the REST API, through the worker of `treasury-bot run` buying for two accounts at the
 * sandbox: each answer checked against the OpenAPI document the API serves, the document itself validated,
 * each operation gated by the console's permission table for every role and by the token's accounts,
 * idempotent POSTs replayed and refused with another body, and every act audited under the token's name.
 */
describe.each(testBackends())('the REST API on %s', { timeout: 60_000 }, (backend) => {
  let api: RunningApi;

  beforeAll(async () => {
    api = await startApi(backend, {
      accounts: ['northco', 'southco'],
      strategies: STRATEGIES,
      settings: SETTINGS,
    });
  }, 60_000);

  afterAll(async () => {
    await api?.close();
  });

  const cycleIdOf = async (strategy: string, slot: string) =>
    (await api.database.cycles.getBySlot(strategy, new Date(slot)))!.id;

  it('serves a valid OpenAPI 3.1 document whose every operation declares the permission its route checks', async () => {
    const document = (await (await fetch(`${api.base}/openapi.json`)).json()) as {
      openapi: string;
      paths: Record<string, Record<string, { 'x-permission': string }>>;
    };
    const result = await validate(structuredClone(document) as never);
    expect(result.valid, result.valid ? '' : compileErrors(result)).toBe(true);
    expect(document.openapi).toBe('3.1.0');
    const routes = api.app.opsRoutes;
    for (const [path, methods] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        const url = `/api/v1${path.replace(/\{([^}]+)\}/g, ':$1')}`;
        const route = routes.find((r) => r.method === method.toUpperCase() && r.url === url);
        expect(route?.requires, `${method} ${url}`).toBe(operation['x-permission']);
      }
    }
  });

  it('gives each operation the permission of its counterpart in the console', () => {
    const routes = api.app.opsRoutes;
    const requires = (method: string, url: string) =>
      routes.find((route) => route.method === method && route.url === url)?.requires;
    const counterparts: [string, string][] = [
      ['POST /api/v1/kill-switch/pause', 'POST /kill-switch/pause'],
      ['POST /api/v1/kill-switch/resume', 'POST /kill-switch/resume'],
      ['POST /api/v1/cycles/:id/approve', 'POST /cycles/:id/approve'],
      ['POST /api/v1/cycles/:id/reject', 'POST /cycles/:id/reject'],
      ['POST /api/v1/cycles/:id/resolve', 'POST /cycles/:id/not-placed'],
      ['POST /api/v1/envelopes', 'POST /envelopes'],
      ['POST /api/v1/envelopes/:id/approve', 'POST /envelopes/:id/approve'],
      ['POST /api/v1/envelopes/:id/revoke', 'POST /envelopes/:id/revoke'],
      ['GET /api/v1/cycles/:id', 'GET /cycles/:id'],
      ['GET /api/v1/approvals', 'GET /approvals'],
      ['GET /api/v1/audit', 'GET /audit'],
      ['GET /api/v1/reports/summary', 'GET /api/reports/summary'],
    ];
    for (const [ours, theirs] of counterparts) {
      const [method, url] = ours.split(' ') as [string, string];
      const [consoleMethod, consoleUrl] = theirs.split(' ') as [string, string];
      expect(requires(method, url), ours).toBeDefined();
      expect(requires(method, url), ours).toBe(requires(consoleMethod, consoleUrl));
    }
  });

  it('refuses each operation with 403 to every role the permissions table refuses, and lets the others through', async () => {
    const operations = api.app.opsRoutes.filter(
      (route) => route.url.startsWith('/api/v1/') && route.method !== 'HEAD' && route.requires !== 'public',
    );
    expect(operations.length).toBe(api.coverage().documented.length);
    const wrong: string[] = [];
    for (const route of operations) {
      // The query is wrong for every operation, so that one let through is refused (400) before it acts.
      const path = route.url
        .replace('/api/v1', '')
        .replace(':name', 'api-dca')
        .replace(/:[a-z]+/g, '1');
      for (const role of ROLES) {
        const answer = await api.call(route.method as 'GET' | 'POST', `${path}?bogus=1`, {
          token: api.tokens[role],
          ...(route.method === 'POST' ? { body: {} } : {}),
        });
        const expected = allows(role, route.requires as never) ? 400 : 403;
        const code = expected === 403 ? 'PERMISSION_DENIED' : 'INVALID_ARGUMENT';
        if (answer.status !== expected || answer.body.code !== code) {
          wrong.push(`${role} ${route.method} ${route.url}: ${answer.status} ${answer.body.code}`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });

  it('runs nothing of a strategy whose first version waits, then approves the versions as a person through a token', async () => {
    const refused = await api.call('POST', '/strategies/api-dca/once', {
      token: api.tokens.operator,
      body: {},
    });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ code: 'STRATEGY_NOT_APPROVED', status: 409 });

    const reloaded = new Promise<ReloadResult>((resolve) => {
      api.app.worker!.onReload((result) => {
        if (result.applied && result.waiting.length === 0) resolve(result);
      });
    });
    for (const name of ['api-dca', 'api-parked', 'api-south']) {
      const approved = await api.call('POST', `/strategies/${name}/versions/1/approve`, {
        token: api.tokens.approver,
      });
      expect(approved.status).toBe(200);
      expect(approved.body).toMatchObject({ version: 1, approvedBy: 'approver' });
    }
    const again = await api.call('POST', '/strategies/api-dca/versions/1/approve', {
      token: api.tokens.admin,
    });
    expect(again.body.code).toBe('STRATEGY_VERSION_APPROVED');
    const missing = await api.call('POST', '/strategies/api-dca/versions/9/approve', {
      token: api.tokens.admin,
    });
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe('STRATEGY_VERSION_NOT_FOUND');
    await reloaded;

    const strategies = await api.call('GET', '/strategies', { token: api.tokens.viewer });
    expect(strategies.status).toBe(200);
    expect(strategies.body.strategies.map((s: { name: string }) => s.name).sort()).toEqual([
      'api-dca',
      'api-parked',
      'api-south',
    ]);
    expect(strategies.body.strategies[0].versions[0]).toMatchObject({ version: 1, state: 'running' });
  });

  it('runs one cycle now, answers a replay of its key with the first answer, and refuses the key for another body', async () => {
    const key = { 'idempotency-key': 'once-2031-05-01' };
    const first = await api.call('POST', '/strategies/api-dca/once', {
      token: api.tokens.operator,
      body: { slot: '2031-05-01T10:00:00Z' },
      headers: key,
    });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ strategy: 'api-dca', outcome: 'placed', amount: '100' });
    expect(first.headers.get('idempotent-replayed')).toBeNull();

    // The members in another order are the same request.
    const replay = await api.call('POST', '/strategies/api-dca/once', {
      token: api.tokens.operator,
      body: { slot: '2031-05-01T10:00:00Z' },
      headers: key,
    });
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual(first.body);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');

    const other = await api.call('POST', '/strategies/api-dca/once', {
      token: api.tokens.operator,
      body: { slot: '2031-05-02T10:00:00Z' },
      headers: key,
    });
    expect(other.status).toBe(422);
    expect(other.body.code).toBe('IDEMPOTENCY_KEY_REUSED');

    // Another token's key of the same text is its own.
    const admins = await api.call('POST', '/strategies/api-dca/once', {
      body: { slot: '2031-05-01T10:00:00Z' },
      headers: key,
    });
    expect(admins.body).toMatchObject({ outcome: 'skipped', reason: 'slot_already_claimed' });

    const cycles = await api.call('GET', '/cycles?strategy=api-dca', { token: api.tokens.viewer });
    expect(cycles.body.cycles).toHaveLength(1);
    // Who asked for each cycle run now, the replay excepted: it ran nothing.
    const asked = (await api.store.audit.list()).filter((entry) => entry.action === 'cycle.run_once');
    expect(asked.map((entry) => [entry.actor, entry.subject])).toEqual([
      ['admin', 'strategy:api-dca'],
      ['operator', 'strategy:api-dca'],
    ]);
    expect(
      await api.sandbox.requests().filter((r) => r.method === 'POST' && r.path === '/client/order'),
    ).toHaveLength(1);
  });

  it('shows a cycle with its decision trace, quote, order and settlement timeline', async () => {
    const id = await cycleIdOf('api-dca', '2031-05-01T10:00:00Z');
    const answer = await api.call('GET', `/cycles/${id}`, { token: api.tokens.viewer });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      id,
      strategy: 'api-dca',
      account: 'northco',
      state: 'placed',
      strategyVersion: 1,
    });
    expect(Array.isArray(answer.body.trace) && answer.body.trace.length).toBeGreaterThan(0);
    expect(answer.body.quotes).toHaveLength(1);
    expect(answer.body.order).toMatchObject({ origin: 'cycle', cycleId: id, status: 'pending' });
    expect(answer.body.settlement[0]).toMatchObject({ fromStatus: null, toStatus: 'pending' });
    const none = await api.call('GET', '/cycles/999999', { token: api.tokens.viewer });
    expect(none.status).toBe(404);
    expect(none.body).toMatchObject({ code: 'CYCLE_NOT_FOUND', instance: '/api/v1/cycles/999999' });
  });

  it('approves a parked cycle as the person the token is named after, and rejects another', async () => {
    const parked = await api.call('POST', '/strategies/api-parked/once', {
      token: api.tokens.operator,
      body: { slot: '2031-06-01T10:00:00Z' },
    });
    expect(parked.body.outcome).toBe('awaiting-approval');
    const id = await cycleIdOf('api-parked', '2031-06-01T10:00:00Z');
    const waiting = await api.call('GET', '/approvals', { token: api.tokens.viewer });
    expect(waiting.body.approvals.map((a: { cycle: { id: number } }) => a.cycle.id)).toEqual([id]);

    const bot = await api.addToken('approvals-bot', 'approver');
    const nobody = await api.call('POST', `/cycles/${id}/approve`, { token: bot, body: {} });
    expect(nobody.status).toBe(403);
    expect(nobody.body.code).toBe('PERSON_UNKNOWN');

    const approved = await api.call('POST', `/cycles/${id}/approve`, {
      token: api.tokens.approver,
      body: { maxPrice: '9.0000' },
    });
    expect(approved.status).toBe(200);
    expect(approved.body).toMatchObject({ approvedBy: ['approver'], approversRequired: 1 });
    expect(new Decimal(approved.body.approvedMaxPrice).lte('9')).toBe(true);

    await api.call('POST', '/strategies/api-parked/once', {
      token: api.tokens.operator,
      body: { slot: '2031-06-02T10:00:00Z' },
    });
    const second = await cycleIdOf('api-parked', '2031-06-02T10:00:00Z');
    const noReason = await api.call('POST', `/cycles/${second}/reject`, {
      token: api.tokens.approver,
      body: {},
    });
    expect(noReason.status).toBe(400);
    expect(noReason.body.errors).toEqual([{ field: 'body.reason', message: expect.any(String) }]);
    const rejected = await api.call('POST', `/cycles/${second}/reject`, {
      token: api.tokens.approver,
      body: { reason: 'not this month' },
    });
    expect(rejected.status).toBe(200);
    expect(rejected.body).toMatchObject({ id: second, state: 'rejected' });
    const twice = await api.call('POST', `/cycles/${second}/reject`, {
      token: api.tokens.admin,
      body: { reason: 'again' },
    });
    expect(twice.status).toBe(409);
    expect(twice.body.code).toBe('CYCLE_NOT_AWAITING_APPROVAL');
  });

  it('adds an envelope, approves it as another person, lists and revokes it', async () => {
    const body = {
      strategy: 'api-parked',
      maxOrder: '200.00',
      maxTotal: '1000.00',
      from: '2031-01-01T00:00:00Z',
      until: '2031-12-31T00:00:00Z',
    };
    const added = await api.call('POST', '/envelopes', { token: api.tokens.approver, body });
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({
      strategy: 'api-parked',
      maxOrder: '200',
      createdBy: 'approver',
      activeAt: null,
    });
    const own = await api.call('POST', `/envelopes/${added.body.id}/approve`, { token: api.tokens.approver });
    expect(own.body.code).toBe('APPROVER_IS_REQUESTER');
    const approved = await api.call('POST', `/envelopes/${added.body.id}/approve`, {
      token: api.tokens.admin,
    });
    expect(approved.status).toBe(200);
    expect(approved.body.approvedBy).toEqual(['admin']);
    expect(approved.body.activeAt).not.toBeNull();
    const listed = await api.call('GET', '/envelopes', { token: api.tokens.viewer });
    expect(listed.body.envelopes.map((e: { id: number }) => e.id)).toContain(added.body.id);
    const revoked = await api.call('POST', `/envelopes/${added.body.id}/revoke`, {
      token: api.tokens.approver,
    });
    expect(revoked.body.revokedBy).toBe('approver');

    const below = await api.call('POST', '/envelopes', {
      token: api.tokens.approver,
      body: { ...body, maxTotal: '100.00' },
    });
    expect(below.status).toBe(422);
    expect(below.body.code).toBe('INVALID_REQUEST');
    const float = await api.call('POST', '/envelopes', {
      token: api.tokens.approver,
      body: { ...body, maxOrder: 200 },
    });
    expect(float.status).toBe(400);
    expect(float.body.errors[0].field).toBe('body.maxOrder');
  });

  it('settles unsure cycles: one declared not placed, one by adopting the service order', async () => {
    const unsure = async (slot: string, quoteId: string) => {
      const { database } = api;
      const claimed = (await database.cycles.claimSlot({
        strategy: 'api-dca',
        account: 'northco',
        slot: new Date(slot),
        trigger: 'once',
        owner: 'lost-replica',
      }))!;
      const at = new Date();
      const quote = await database.quotes.record(claimed.id, {
        quoteId,
        symbol: 'USDTBRL',
        amount: new Decimal('100'),
        price: new Decimal('5.4'),
        totalCost: new Decimal('100'),
        totalFilled: new Decimal('18.5'),
        expiresIn: new Decimal('5'),
        requestedAt: at,
        receivedAt: at,
        deadlineAt: at,
      });
      await database.cycles.transition(claimed.id, 'claimed', 'quoted', { quote });
      await database.cycles.transition(claimed.id, 'quoted', 'submitting');
      return (await database.cycles.transition(claimed.id, 'submitting', 'unsure'))!.id;
    };
    const first = await unsure('2031-07-01T10:00:00Z', 'q-not-placed');
    const notPlaced = await api.call('POST', `/cycles/${first}/resolve`, {
      token: api.tokens.operator,
      body: { resolution: 'not_placed' },
    });
    expect(notPlaced.status).toBe(200);
    expect(notPlaced.body).toMatchObject({ cycle: { id: first, state: 'not_placed' }, order: null });

    // An order at the service the lost replica may have placed, read from the service as it is adopted.
    const service = createPurchaseClient({ baseUrl: api.sandbox.url, token: accountToken('northco') });
    const quote = await service.getQuote({ symbol: 'USDTBRL', amount: new Decimal('100') });
    const order = await service.createOrder({ quoteId: quote.quoteId });
    await service.close();
    const second = await unsure('2031-07-02T10:00:00Z', quote.quoteId);
    const adopted = await api.call('POST', `/cycles/${second}/resolve`, {
      token: api.tokens.operator,
      body: { resolution: 'order', order: order.id },
    });
    expect(adopted.status).toBe(200);
    expect(adopted.body).toMatchObject({
      cycle: { id: second, state: 'placed' },
      order: { serviceOrderId: order.id },
    });
    const again = await api.call('POST', `/cycles/${second}/resolve`, {
      token: api.tokens.operator,
      body: { resolution: 'not_placed' },
    });
    expect(again.body.code).toBe('CYCLE_NOT_UNSURE');
  });

  it('pages through the orders of a period as `export orders` writes them, and reports its figures', async () => {
    const period = `from=${new Date(Date.now() - 86_400_000).toISOString()}&to=${new Date(Date.now() + 86_400_000).toISOString()}`;
    const all = await api.call('GET', `/orders?${period}`, { token: api.tokens.viewer });
    expect(all.body.orders.length).toBeGreaterThanOrEqual(2);
    expect(all.body.next).toBeNull();
    const seen: string[] = [];
    let cursor: string | null = '';
    while (cursor !== null) {
      const page: { body: { orders: { orderId: string }[]; next: string | null } } = await api.call(
        'GET',
        `/orders?${period}&limit=1${cursor ? `&cursor=${cursor}` : ''}`,
        { token: api.tokens.viewer },
      );
      expect(page.body.orders.length).toBeLessThanOrEqual(1);
      seen.push(...page.body.orders.map((o) => o.orderId));
      cursor = page.body.next;
    }
    expect(seen).toEqual(all.body.orders.map((o: { orderId: string }) => o.orderId));
    const ours = await api.call('GET', `/orders?${period}&strategy=api-dca&status=pending`, {
      token: api.tokens.viewer,
    });
    expect(ours.body.orders.every((o: { strategy: string }) => o.strategy === 'api-dca')).toBe(true);
    expect(ours.body.orders[0].amount).toBe('100.00');
    const badDate = await api.call('GET', '/orders?from=yesterday&to=2031-01-01', {
      token: api.tokens.viewer,
    });
    expect(badDate.status).toBe(400);
    expect(badDate.body.code).toBe('INVALID_ARGUMENT');

    const report = await api.call('GET', `/reports/summary?${period}&by=strategy`, {
      token: api.tokens.viewer,
    });
    expect(report.status).toBe(200);
    expect(report.body.groups.map((g: { group: string }) => g.group)).toContain('api-dca');
    expect(report.body.total.orders).toBeGreaterThanOrEqual(2);
  });

  it('reads the status, the cycles a page at a time, and answers unknown paths with a problem', async () => {
    const status = await api.call('GET', '/status?limit=5', { token: api.tokens.viewer });
    expect(status.status).toBe(200);
    expect(status.body.recentCycles.length).toBeLessThanOrEqual(5);
    const first = await api.call('GET', '/cycles?limit=2', { token: api.tokens.viewer });
    expect(first.body.cycles).toHaveLength(2);
    const next = await api.call('GET', `/cycles?limit=2&cursor=${first.body.next}`, {
      token: api.tokens.viewer,
    });
    expect(next.body.cycles[0].id).toBeLessThan(first.body.cycles[1].id);
    const parked = await api.call('GET', '/cycles?state=rejected', { token: api.tokens.viewer });
    expect(parked.body.cycles.map((c: { state: string }) => c.state)).toEqual(['rejected']);
    const unknown = await api.call('GET', '/nothing-here', { token: api.tokens.viewer });
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(unknown.body.code).toBe('NOT_FOUND');
    const text = await fetch(`${api.base}/kill-switch/pause`, {
      method: 'POST',
      headers: { authorization: `Bearer ${api.tokens.operator}`, 'content-type': 'text/plain' },
      body: 'pause',
    });
    expect(text.status).toBe(415);
    expect(((await text.json()) as { code: string }).code).toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  it("keeps a token limited to some accounts to their records: the others' are neither listed, summed nor found", async () => {
    const south = await api.addToken('south-bot', 'admin', { accounts: ['southco'] });
    const ran = await api.call('POST', '/strategies/api-south/once', {
      token: south,
      body: { slot: '2031-08-01T10:00:00Z' },
    });
    expect(ran.body).toMatchObject({ strategy: 'api-south', outcome: 'placed' });
    const theirs = await cycleIdOf('api-south', '2031-08-01T10:00:00Z');
    const northern = await cycleIdOf('api-dca', '2031-05-01T10:00:00Z');
    const parked = await cycleIdOf('api-parked', '2031-06-01T10:00:00Z');

    const cycles = await api.call('GET', '/cycles', { token: south });
    expect(cycles.body.cycles.map((c: { id: number; account: string }) => [c.id, c.account])).toEqual([
      [theirs, 'southco'],
    ]);
    expect((await api.call('GET', `/cycles/${theirs}`, { token: south })).status).toBe(200);
    expect((await api.call('GET', `/cycles/${northern}`, { token: south })).body.code).toBe(
      'CYCLE_NOT_FOUND',
    );
    const strategies = await api.call('GET', '/strategies', { token: south });
    expect(strategies.body.strategies.map((s: { name: string }) => s.name)).toEqual(['api-south']);
    expect((await api.call('GET', '/approvals', { token: south })).body.approvals).toEqual([]);
    expect((await api.call('GET', '/envelopes', { token: south })).body.envelopes).toEqual([]);
    const status = await api.call('GET', '/status', { token: south });
    expect(new Set(status.body.recentCycles.map((c: { account: string }) => c.account))).toEqual(
      new Set(['southco']),
    );
    expect(status.body.replicas).toHaveLength(1);
    const period = `from=${new Date(Date.now() - 86_400_000).toISOString()}&to=${new Date(Date.now() + 86_400_000).toISOString()}`;
    const orders = await api.call('GET', `/orders?${period}`, { token: south });
    expect(orders.body.orders.map((o: { strategy: string }) => o.strategy)).toEqual(['api-south']);
    const report = await api.call('GET', `/reports/summary?${period}&by=strategy`, { token: south });
    expect(report.body.groups.map((g: { group: string }) => g.group)).toEqual(['api-south']);
    expect(report.body.total.spent).toBe(orders.body.orders[0].totalCost);

    const refusals = [
      await api.call('POST', `/cycles/${parked}/approve`, { token: south, body: {} }),
      await api.call('POST', `/cycles/${northern}/resolve`, {
        token: south,
        body: { resolution: 'not_placed' },
      }),
      await api.call('POST', '/strategies/api-dca/once', { token: south, body: {} }),
      await api.call('POST', '/strategies/api-dca/versions/1/approve', { token: south }),
      await api.call('POST', '/envelopes', {
        token: south,
        body: {
          strategy: 'api-parked',
          maxOrder: '1.00',
          maxTotal: '1.00',
          from: '2031-01-01T00:00:00Z',
          until: '2031-02-01T00:00:00Z',
        },
      }),
    ];
    expect(refusals.map((answer) => answer.body.code)).toEqual([
      'CYCLE_NOT_FOUND',
      'CYCLE_NOT_FOUND',
      'STRATEGY_NOT_FOUND',
      'STRATEGY_NOT_FOUND',
      'STRATEGY_NOT_FOUND',
    ]);
    const envelope = (await api.call('GET', '/envelopes')).body.envelopes[0].id;
    expect((await api.call('POST', `/envelopes/${envelope}/revoke`, { token: south })).body.code).toBe(
      'ENVELOPE_NOT_FOUND',
    );
    for (const path of ['/kill-switch/pause', '/kill-switch/resume']) {
      const refused = await api.call('POST', path, { token: south });
      expect(refused.status).toBe(403);
      expect(refused.body.code).toBe('ACCOUNTS_LIMITED');
    }
    // The audit log too: only the rows of its accounts' cycles, strategies and envelopes.
    const audit = await api.call('GET', '/audit?limit=1000', { token: south });
    expect(new Set(audit.body.entries.map((e: { account: string }) => e.account))).toEqual(
      new Set(['southco']),
    );
    expect(audit.body.entries[0]).toMatchObject({
      actor: 'south-bot',
      action: 'cycle.run_once',
      subject: 'strategy:api-south',
    });

    const both = await api.addToken('group-bot', 'viewer', { accounts: ['northco', 'southco'] });
    expect((await api.call('GET', `/cycles/${northern}`, { token: both })).status).toBe(200);
  });

  // After every cycle run through the API: a replica reads the kill switch at most once a second, so a cycle
  // asked for right after the resume could still be skipped as paused.
  it('pauses and resumes every replica, audited under the name of the token that did it', async () => {
    const erp = await api.addToken('erp-bot', 'operator');
    const paused = await api.call('POST', '/kill-switch/pause', {
      token: erp,
      body: { reason: 'month end' },
    });
    expect(paused.body).toMatchObject({ paused: true, reason: 'month end', changedBy: 'erp-bot' });
    const status = await api.call('GET', '/status', { token: api.tokens.viewer });
    expect(status.body.paused).toMatchObject({ paused: true, by: 'erp-bot' });
    expect(status.body.replicas).toHaveLength(1);
    const resumed = await api.call('POST', '/kill-switch/resume', { token: erp });
    expect(resumed.body.paused).toBe(false);

    const audit = await api.call('GET', '/audit?limit=2', { token: api.tokens.admin });
    expect(audit.body.entries.map((e: { actor: string; action: string }) => [e.actor, e.action])).toEqual([
      ['erp-bot', 'kill_switch.resume'],
      ['erp-bot', 'kill_switch.pause'],
    ]);
    const older = await api.call('GET', `/audit?limit=2&cursor=${audit.body.next}`, {
      token: api.tokens.admin,
    });
    expect(older.body.entries[0].id).toBeLessThan(audit.body.entries[1].id);
    const forged = await api.call('GET', '/audit?cursor=bm90LWEtY3Vyc29y', { token: api.tokens.admin });
    expect(forged.status).toBe(400);
  });

  it('serves a reference page of every operation and problem code, without a script, under the console CSP', async () => {
    const response = await fetch(`${api.base}/docs`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = response.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    const page = await response.text();
    expect(page).not.toMatch(/<script|style=|\son[a-z]+=/i);
    for (const operationId of api.coverage().documented) expect(page).toContain(`id="${operationId}"`);
    expect(page).toContain('id="problem-IDEMPOTENCY_KEY_REUSED"');
  });

  it('never wrote a token to the log or the audit log', async () => {
    const audit = JSON.stringify(await api.store.audit.list({ limit: 10_000 }));
    expect(api.issued.length).toBe((await api.store.apiTokens.list()).length);
    for (const token of api.issued) {
      expect(api.logText()).not.toContain(token.slice(16));
      expect(audit).not.toContain(token.slice(16));
    }
  });

  it('called every operation of the document', () => {
    const { documented, called } = api.coverage();
    expect(called).toEqual(documented);
  });
});
