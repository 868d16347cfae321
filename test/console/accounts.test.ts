import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONSOLE_ACTIONS } from '../../src/console/actions.js';
import { APPROVAL_ACTIONS } from '../../src/console/approval-actions.js';
import { hashPassword } from '../../src/console/passwords.js';
import { createApprovalControl } from '../../src/control/index.js';
import { EVERY_ACCOUNT } from '../../src/db/index.js';
import type { DcaStrategy } from '../../src/strategy/index.js';
import { d, type EngineBench, freshSlot, startEngineBench, strategy } from '../engine/support/harness.js';
import {
  type Answer,
  type ConsoleClient,
  loggedIn,
  PASSWORD,
  type RunningConsole,
  startTestConsole,
  TEST_COST,
} from './support.js';

const ACCOUNTS = ['alpha', 'beta'] as const;
type Account = (typeof ACCOUNTS)[number];
/** Figures only beta's rows carry: none may reach a person limited to alpha. */
const BETA_FIGURES = ['777.77', '5.7777', '2000.25'];
const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
/** Around today, when the rows are written. */
const REPORT_PERIOD = `from=${day(-2)}&to=${day(2)}&tz=UTC`;

const guarded = (account: Account): DcaStrategy =>
  strategy({
    name: `${account}-guarded`,
    account,
    approval: { required: 'always', approvers: 1, timeoutMs: 3_600_000, priceTolerancePct: d('0.5') },
  });

/**
 * Two accounts in one console (the real sandbox serving both, each with its token): people limited to
 * alpha see no row of beta in any page, download or report, are told beta's records do not exist (404),
 * cannot act on them through any action route, and may not hold the kill switch that stops both; an admin
 * sees both and the group's total; the account filter narrows every list and refuses a name outside the
 * person's accounts. Rows are written through the repositories, parked cycles by real engine cycles.
 */
describe('console with two accounts', () => {
  let console: RunningConsole;
  let bench: EngineBench;
  const people = new Map<string, ConsoleClient>();
  /** Each account's records, by what they are. */
  const records = new Map<Account, { unsure: number; placed: number; parked: number; envelope: number }>();
  let slot = 0;

  async function unsureCycle(name: string, account: Account): Promise<number> {
    const { database } = console.test;
    const cycle = await database.cycles.claimSlot({
      strategy: name,
      account,
      slot: new Date(Date.UTC(2026, 3, 1, 0, 0, slot++)),
      trigger: 'schedule',
      owner: 'test',
    });
    await database.cycles.transition(cycle!.id, 'claimed', 'submitting');
    await database.cycles.transition(cycle!.id, 'submitting', 'unsure');
    return cycle!.id;
  }

  async function placedCycle(account: Account, id: string, amount: string, price: string) {
    const cycleId = await unsureCycle(`${account}-dca`, account);
    await console.test.database.orders.recordPlacedWithCycle(
      cycleId,
      {
        account,
        id,
        symbol: 'USDTBRL',
        amount: d(amount),
        price: d(price),
        side: 'buy',
        timestamp: new Date(),
      },
      { from: 'unsure', reasonCode: 'reconciled' },
    );
    return cycleId;
  }

  async function parkedCycle(account: Account): Promise<number> {
    const report = await bench.run(guarded(account), freshSlot());
    expect(report.outcome).toBe('awaiting-approval');
    return (await bench.database.cycles.getBySlot(guarded(account).name, new Date(report.slot)))!.id;
  }

  async function pendingEnvelope(account: Account): Promise<number> {
    const envelope = await createApprovalControl(console.test.database).addEnvelope(
      {
        strategy: guarded(account).name,
        maxOrder: d('10.00'),
        maxTotal: d('20.00'),
        maxPrice: null,
        validFrom: new Date(Date.now() - 60_000),
        validUntil: new Date(Date.now() + 3_600_000),
      },
      'approver',
    );
    return envelope.id;
  }

  async function lastAuditId(): Promise<number> {
    return (await console.store.audit.list({ limit: 1 }))[0]?.id ?? 0;
  }

  /** The page without its CSRF tokens, which are random and could spell anything. */
  const withoutTokens = (body: string) => body.replace(/value="[A-Za-z0-9_-]{32,}"/g, '');
  /** The account filter lists the accounts the person sees: not a row. */
  const withoutFilter = (body: string) => body.replace(/<select name="account">.*?<\/select>/gs, '');

  /** No record of beta: none of its names, ids, figures or cycle links. */
  function expectNoRowOfBeta(answer: Answer, where: string) {
    expect(answer.status, `${where}: ${answer.body.slice(0, 300)}`).toBe(200);
    const body = withoutFilter(withoutTokens(answer.body));
    expect(body, where).not.toMatch(/beta-|BETA-|>beta<|"beta"|^beta,/m);
    for (const figure of BETA_FIGURES) expect(body, `${where} shows ${figure}`).not.toContain(figure);
    const beta = records.get('beta')!;
    for (const id of [beta.unsure, beta.placed, beta.parked]) {
      expect(body, `${where} links cycle ${id}`).not.toMatch(new RegExp(`/cycles/${id}["/]`));
    }
  }

  /** Not even the name: for a person limited to alpha, beta does not exist. */
  function expectNothingOfBeta(answer: Answer, where: string) {
    expectNoRowOfBeta(answer, where);
    // The filter too: it offers only the person's accounts.
    expect(withoutTokens(answer.body), where).not.toMatch(/beta/i);
  }

  beforeAll(async () => {
    console = await startTestConsole({ accounts: ACCOUNTS });
    bench = await startEngineBench({ test: console.test, accounts: ACCOUNTS });
    const { database } = console.test;
    await database.strategies.upsertSeen(
      ACCOUNTS.flatMap((account) =>
        ['dca', 'ops', 'unsure'].map((suffix) => ({
          name: `${account}-${suffix}`,
          kind: 'dca',
          account,
          config: {
            name: `${account}-${suffix}`,
            schedule: '0 10 * * *',
            timezone: 'UTC',
            budget: { perDay: '5000.00', perMonth: '90000.00' },
          },
          hash: 'h',
        })),
      ),
    );
    for (const account of ACCOUNTS) {
      await bench.run(guarded(account), freshSlot()).catch(() => undefined);
    }
    const figures = { alpha: ['111.11', '5.1111'], beta: ['777.77', '5.7777'] } as const;
    for (const account of ACCOUNTS) {
      const [amount, price] = figures[account];
      const placed = await placedCycle(account, `${account.toUpperCase()}-ORDER-1`, amount, price);
      // The same order id at both accounts: two orders, each its account's.
      await placedCycle(account, 'SHARED-ORDER', '100.00', price);
      for (const id of [`${account.toUpperCase()}-EXT-1`, 'EXT-SHARED']) {
        await database.orders.recordExternal({
          account,
          id,
          symbol: 'USDTBRL',
          amount: d(id === 'EXT-SHARED' ? '10.00' : '50.00'),
          price: d(price),
          side: 'buy',
          timestamp: new Date(),
        });
      }
      const discrepant = await unsureCycle(`${account}-dca`, account);
      await database.orders.recordPlacedWithCycle(
        discrepant,
        {
          account,
          id: `${account.toUpperCase()}-DISCREPANT`,
          symbol: 'USDTBRL',
          amount: d('0.00'),
          price: d(price),
          side: 'buy',
          timestamp: new Date(),
        },
        {
          from: 'unsure',
          reasonCode: 'reconciled',
          discrepancy: [{ field: 'price', expected: '5.0000', got: price }],
        },
      );
      records.set(account, {
        unsure: await unsureCycle(`${account}-dca`, account),
        placed,
        parked: await parkedCycle(account),
        envelope: await pendingEnvelope(account),
      });
    }
    const credit = {
      alpha: { total: '5000.00', used: '3999.50', available: '1000.50' },
      beta: { total: '3000.00', used: '999.75', available: '2000.25' },
    } as const;
    for (const account of ACCOUNTS) {
      const line = credit[account];
      await database.balances.record({
        account,
        fiat: { currency: 'BRL', balance: d(account === 'alpha' ? '10.00' : '20.00') },
        crypto: { currency: 'USDT', balance: d('0') },
        credit: { total: d(line.total), used: d(line.used), available: d(line.available) },
        canWithdraw: true,
        takenAt: new Date(),
      });
    }
    const passwordHash = await hashPassword(PASSWORD, TEST_COST);
    for (const [name, role] of [
      ['vera', 'viewer'],
      ['otto', 'operator'],
      ['ada', 'approver'],
    ] as const) {
      await console.store.people.add({ name, role, passwordHash, accounts: ['alpha'] }, 'test-setup');
      people.set(name, await loggedIn(console, name));
    }
    people.set('admin', await loggedIn(console, 'admin'));
  }, 120_000);

  afterAll(async () => {
    await bench?.close();
    await console?.close();
  });

  const PAGES = [
    '/',
    '/live',
    '/strategies',
    '/orders',
    '/orders?status=pending',
    '/attention',
    '/approvals',
    '/orders.csv',
    `/api/reports/summary?${REPORT_PERIOD}&by=strategy`,
    `/api/reports/summary?${REPORT_PERIOD}&by=day`,
    `/api/reports/orders?${REPORT_PERIOD}`,
    `/api/reports/orders?${REPORT_PERIOD}&format=csv`,
  ];

  it('shows an admin both accounts and their group total on the overview, exactly', async () => {
    const overview = (await people.get('admin')!.get('/')).body;
    const row = (label: string) => {
      const found = new RegExp(
        `<tr class="(?:account|total)"><th scope="row">${label}</th>(.*?)</tr>`,
        's',
      ).exec(overview);
      expect(found, label).not.toBeNull();
      return [...found![1]!.matchAll(/<td[^>]*>(.*?)<\/td>/gs)].map((cell) =>
        cell[1]!.replace(/<[^>]+>/g, '').trim(),
      );
    };
    // Fiat, available, total, used, withdrawals, as of, today, month, open orders, open cost.
    expect(row('alpha').slice(0, 4)).toEqual(['10.00 BRL', '1000.50', '5000.00', '3999.50 (80.0%)']);
    expect(row('beta').slice(0, 4)).toEqual(['20.00 BRL', '2000.25', '3000.00', '999.75 (33.3%)']);
    const total = row('Group total');
    expect(total.slice(0, 4)).toEqual(['30.00 BRL', '3000.75', '8000.00', '4999.25 (62.5%)']);
    // Open: the two placed orders, the two external ones and the discrepant one of each account.
    expect(row('alpha').slice(8)).toEqual(['5', '271.11']);
    expect(row('beta').slice(8)).toEqual(['5', '937.77']);
    expect(total.slice(8)).toEqual(['10', '1208.88']);
  });

  it('shows a person limited to alpha only alpha on the overview, without a total or the kill switch', async () => {
    const overview = (await people.get('otto')!.get('/')).body;
    expect(overview).toMatch(/<th scope="row">alpha<\/th>/);
    expect(overview).not.toContain('Group total');
    expect(overview).not.toContain('Total of these accounts');
    expect(overview).not.toContain('/kill-switch/');
    expect((await people.get('admin')!.get('/')).body).toContain('action="/kill-switch/pause"');
  });

  it.each(['vera', 'otto', 'ada'])('%s (limited to alpha) sees no row of beta anywhere', async (name) => {
    const client = people.get(name)!;
    for (const path of PAGES) {
      const answer = await client.get(path);
      expectNothingOfBeta(answer, `${name} ${path}`);
    }
    // Asking for beta's strategy by name finds nothing of it (the page only repeats the name asked).
    const asked = withoutTokens((await client.get('/orders?strategy=beta-dca')).body);
    expect(asked).toContain('No order matches.');
    expect(asked).not.toMatch(/BETA-|777\.77|5\.7777|Cumulative spend/);
    // The lists are not empty: alpha's rows are there.
    expect((await client.get('/orders')).body).toContain('ALPHA-ORDER-1');
    expect((await client.get('/attention')).body).toContain('ALPHA-EXT-1');
    expect((await client.get('/approvals')).body).toContain('alpha-guarded');
    const exported = JSON.parse((await client.get(`/api/reports/orders?${REPORT_PERIOD}`)).body) as {
      orders: { account: string; orderId: string }[];
    };
    expect(exported.orders.length).toBeGreaterThan(0);
    expect(new Set(exported.orders.map((order) => order.account))).toEqual(new Set(['alpha']));
  });

  it('reconciles only the accounts of a limited operator, each against its own service', async () => {
    const answer = await people.get('otto')!.get(`/api/reports/reconciliation?${REPORT_PERIOD}`);
    expectNothingOfBeta(answer, 'reconciliation');
    const report = JSON.parse(answer.body) as { accounts: { account?: string; name?: string }[] };
    expect(report.accounts).toHaveLength(1);
    const admin = JSON.parse(
      (await people.get('admin')!.get(`/api/reports/reconciliation?${REPORT_PERIOD}`)).body,
    );
    expect(admin.accounts).toHaveLength(2);
  });

  it('shows an admin both accounts in every list, each row naming its account', async () => {
    const admin = people.get('admin')!;
    const orders = (await admin.get('/orders')).body;
    expect(orders).toMatch(/ALPHA-ORDER-1<\/code><\/td><td>alpha<\/td>/);
    expect(orders).toMatch(/BETA-ORDER-1<\/code><\/td><td>beta<\/td>/);
    const attention = (await admin.get('/attention')).body;
    for (const id of ['ALPHA-EXT-1', 'BETA-EXT-1', 'ALPHA-DISCREPANT', 'BETA-DISCREPANT']) {
      expect(attention).toContain(id);
    }
    const approvals = (await admin.get('/approvals')).body;
    for (const account of ACCOUNTS) {
      const { parked, envelope } = records.get(account)!;
      expect(approvals).toMatch(
        new RegExp(`<tr id="cycle-${parked}"><td><a [^>]+>${parked}</a></td><td>${account}</td>`),
      );
      expect(approvals).toMatch(
        new RegExp(`<tr id="envelope-${envelope}"><td>${envelope}</td><td>${account}</td>`),
      );
    }
    expect((await admin.get('/strategies')).body).toMatch(
      /<tr id="beta-dca"><td>beta-dca<\/td><td>beta<\/td>/,
    );
    const csv = (await admin.get('/orders.csv')).body;
    expect(csv.split('\r\n')[0]).toMatch(/^account,orderId,/);
    expect(csv).toMatch(/^beta,BETA-ORDER-1,/m);
    expect(csv).toMatch(/^alpha,ALPHA-ORDER-1,/m);
  });

  it('narrows every list to the account of the filter, and refuses one outside the person’s accounts', async () => {
    const admin = people.get('admin')!;
    for (const path of ['/', '/strategies', '/orders', '/attention', '/approvals', '/orders.csv', '/audit']) {
      const separator = path.includes('?') ? '&' : '?';
      const answer = await admin.get(`${path}${separator}account=alpha`);
      expectNoRowOfBeta(answer, `admin ${path} filtered on alpha`);
      const beta = await admin.get(`${path}${separator}account=beta`);
      expect(beta.status, path).toBe(200);
      expect(withoutTokens(beta.body), path).not.toMatch(/ALPHA-|alpha-dca|111\.11/);
    }
    const exported = JSON.parse(
      (await admin.get(`/api/reports/orders?${REPORT_PERIOD}&account=beta`)).body,
    ) as {
      orders: { account: string }[];
    };
    expect(new Set(exported.orders.map((order) => order.account))).toEqual(new Set(['beta']));
    expect((await admin.get('/orders?account=beta')).body).toContain(
      '<option value="beta" selected>beta</option>',
    );

    const unknown = await admin.get('/orders?account=gamma');
    expect(unknown.status).toBe(400);
    expect(unknown.body).toContain('account: no account named &quot;gamma&quot; (accounts: alpha, beta)');
    // Beyond the person's accounts: refused as unknown, naming only theirs.
    const vera = people.get('vera')!;
    for (const path of ['/orders?account=beta', '/orders.csv?account=beta', '/?account=beta']) {
      const refused = await vera.get(path);
      expect(refused.status, path).toBe(400);
      expect(refused.body).toContain('no account named &quot;beta&quot; (accounts: alpha)');
    }
    const report = await vera.get(`/api/reports/summary?${REPORT_PERIOD}&account=beta`);
    expect(report.status).toBe(400);
    expect(JSON.parse(report.body)).toEqual({
      error: 'account: no account named "beta" (accounts: alpha)',
    });
  });

  it('answers 404 for beta’s records to a person limited to alpha, and opens them for an admin', async () => {
    const beta = records.get('beta')!;
    const vera = people.get('vera')!;
    const admin = people.get('admin')!;
    for (const id of [beta.unsure, beta.placed, beta.parked]) {
      const refused = await vera.get(`/cycles/${id}`);
      expect(refused.status).toBe(404);
      expect(refused.body).toContain(`no cycle with id ${id}`);
      expect((await admin.get(`/cycles/${id}`)).status).toBe(200);
    }
    expect((await vera.get(`/cycles/${records.get('alpha')!.placed}`)).status).toBe(200);
    expect((await vera.get('/orders/BETA-ORDER-1')).status).toBe(404);
    expect((await admin.get('/orders/BETA-ORDER-1')).location).toBe(`/cycles/${beta.placed}`);
    // The id both accounts know: the limited person is taken to alpha's, the admin asked which.
    const shared = await vera.get('/orders/SHARED-ORDER');
    const alphaShared = await console.test.database.orders.getByServiceId('alpha', 'SHARED-ORDER');
    expect(shared.location).toBe(`/cycles/${alphaShared!.cycleId}`);
    const choice = await admin.get('/orders/SHARED-ORDER');
    expect(choice.status).toBe(200);
    expect(choice.body).toMatch(/<td>alpha<\/td><td><a href="\/cycles\/\d+">/);
    expect(choice.body).toMatch(/<td>beta<\/td><td><a href="\/cycles\/\d+">/);
    expect((await admin.get('/orders/SHARED-ORDER?account=beta')).location).toMatch(/^\/cycles\/\d+$/);
  });

  describe('acting on the other account', () => {
    /** What a person limited to alpha tries on `account`'s record of each route, and who tries it. */
    async function attempt(
      path: string,
      account: Account,
    ): Promise<{
      who: string;
      path: string;
      form: Record<string, string>;
      unchanged: () => Promise<unknown>;
    }> {
      const { database } = console.test;
      switch (path) {
        case '/kill-switch/pause':
        case '/kill-switch/resume':
          return { who: 'otto', path, form: {}, unchanged: () => database.control.get() };
        case '/strategies/:name/pause':
          return {
            who: 'otto',
            path: `/strategies/${account}-ops/pause`,
            form: {},
            unchanged: async () => (await database.strategies.get(`${account}-ops`))?.haltedAt,
          };
        case '/strategies/:name/resume': {
          await database.strategies.halt(`${account}-ops`, 'held for the test');
          return {
            who: 'otto',
            path: `/strategies/${account}-ops/resume`,
            form: {},
            unchanged: async () => (await database.strategies.get(`${account}-ops`))?.haltedAt,
          };
        }
        case '/cycles/:id/not-placed':
        case '/cycles/:id/adopt': {
          const id = await unsureCycle(`${account}-unsure`, account);
          const client = console.clients.get(account)!;
          const quote = await client.getQuote({ symbol: 'USDTBRL', amount: d('100.00') });
          const order = await client.createOrder({ quoteId: quote.quoteId });
          return {
            who: 'otto',
            path: path.replace(':id', String(id)),
            form: { order: order.id },
            unchanged: async () => (await database.cycles.get(id))?.state,
          };
        }
        case '/orders/:id/acknowledge':
          return {
            who: 'otto',
            path: '/orders/EXT-SHARED/acknowledge',
            form: { account, note: 'ours' },
            unchanged: () =>
              console.store.reads.acknowledgements([{ account, serviceOrderId: 'EXT-SHARED' }]),
          };
        case '/users':
          return {
            who: 'otto',
            path,
            form: { name: `made-by-otto-${slot++}`, role: 'viewer', password: PASSWORD },
            unchanged: () => console.store.people.list(),
          };
        case '/users/:name/disable':
          return {
            who: 'otto',
            path: '/users/vera/disable',
            form: {},
            unchanged: () => console.store.people.list(),
          };
        case '/cycles/:id/approve':
        case '/cycles/:id/reject': {
          const id = await parkedCycle(account);
          return {
            who: 'ada',
            path: path.replace(':id', String(id)),
            form: { reason: 'not now' },
            unchanged: async () => (await database.cycles.get(id))?.state,
          };
        }
        case '/envelopes':
          return {
            who: 'ada',
            path,
            form: {
              strategy: `${account}-guarded`,
              maxOrder: '10.00',
              maxTotal: '20.00',
              from: '2030-01-01',
              until: '2030-02-01T00:00:00Z',
            },
            unchanged: async () => (await database.approvals.listEnvelopes(EVERY_ACCOUNT)).length,
          };
        case '/envelopes/:id/approve':
        case '/envelopes/:id/revoke': {
          const id = await pendingEnvelope(account);
          return {
            who: 'ada',
            path: path.replace(':id', String(id)),
            form: {},
            unchanged: async () =>
              (await database.approvals.listEnvelopes(EVERY_ACCOUNT)).find((e) => e.id === id),
          };
        }
        default:
          throw new Error(`no attempt for ${path}`);
      }
    }

    /** Changes that reach every account, or that only an admin may make: refused to a limited person. */
    const FORBIDDEN = new Set([
      '/kill-switch/pause',
      '/kill-switch/resume',
      '/users',
      '/users/:name/disable',
    ]);
    const ROUTES = [...CONSOLE_ACTIONS, ...APPROVAL_ACTIONS].map((action) => action.path);

    it('walks every action route of the console', () => {
      expect(ROUTES).toHaveLength(14);
    });

    it.each(ROUTES)('refuses %s on beta’s record, changing nothing', async (route) => {
      const { who, path, form, unchanged } = await attempt(route, 'beta');
      const client = people.get(who)!;
      const before = { audit: await lastAuditId(), state: await unchanged() };
      const answer = await client.post(path, { ...form, _csrf: await client.csrfFrom('/'), back: '/' });
      expect(answer.status, answer.body).toBe(FORBIDDEN.has(route) ? 403 : 404);
      for (const figure of BETA_FIGURES) expect(answer.body).not.toContain(figure);
      expect(await lastAuditId()).toBe(before.audit);
      expect(await unchanged()).toEqual(before.state);
    });

    it.each(ROUTES.filter((route) => !FORBIDDEN.has(route)))(
      'lets the same person do %s on alpha’s record',
      async (route) => {
        if (route === '/strategies/:name/resume') {
          await console.test.database.strategies.clearHalt('alpha-ops');
        }
        const { who, path, form } = await attempt(route, 'alpha');
        const client = people.get(who)!;
        const before = await lastAuditId();
        const answer = await client.post(path, { ...form, _csrf: await client.csrfFrom('/'), back: '/' });
        expect(answer.status, answer.body).toBe(303);
        const [latest] = await console.store.audit.list({ limit: 1 });
        expect(latest?.id).toBeGreaterThan(before);
        expect(latest?.actor).toBe(who);
      },
    );

    it('acknowledges the shared external id under the account named, as its own subject', async () => {
      const [entry] = await console.store.audit.list({ limit: 1 });
      const acknowledged = await console.store.reads.acknowledgements([
        { account: 'alpha', serviceOrderId: 'EXT-SHARED' },
        { account: 'beta', serviceOrderId: 'EXT-SHARED' },
      ]);
      expect([...acknowledged.keys()]).toEqual(['order:alpha:EXT-SHARED']);
      expect(entry).toBeDefined();
    });
  });

  it('names each audit row’s account, and filters the log on it', async () => {
    const admin = people.get('admin')!;
    const log = (await admin.get('/audit')).body;
    expect(log).toMatch(/<td>order\.acknowledge<\/td><td>alpha<\/td><td>order:alpha:EXT-SHARED<\/td>/);
    expect(log).toMatch(/<td>strategy\.pause<\/td><td>alpha<\/td><td>strategy:alpha-ops<\/td>/);
    expect(log).toMatch(/<td>envelope\.approve<\/td><td>alpha<\/td><td>envelope:\d+<\/td>/);
    expect(log).toMatch(/<td>approval\.approve<\/td><td>alpha<\/td><td>cycle:\d+<\/td>/);
    expect(log).toMatch(/<td>session\.login<\/td><td><\/td><td>user:/);
    const alphaOnly = (await admin.get('/audit?account=alpha')).body;
    expect(alphaOnly).not.toContain('session.login');
    expect(alphaOnly).toContain('order:alpha:EXT-SHARED');
  });

  it('adds a person limited to accounts from the users page, and refuses a limited admin', async () => {
    const admin = people.get('admin')!;
    const page = (await admin.get('/users')).body;
    expect(page).toContain('<input type="checkbox" name="accounts" value="beta">');
    expect(page).toMatch(/<td>vera<\/td><td>viewer<\/td><td>alpha<\/td>/);
    const csrf = await admin.csrfFrom('/users');
    const added = await admin.post('/users', {
      _csrf: csrf,
      name: 'bea',
      role: 'viewer',
      password: PASSWORD,
      accounts: 'beta',
    });
    expect(added.status, added.body).toBe(303);
    expect((await console.store.people.findByName('bea'))?.accounts).toEqual(['beta']);
    const bea = await loggedIn(console, 'bea');
    const orders = withoutTokens((await bea.get('/orders')).body);
    expect(orders).toContain('BETA-ORDER-1');
    expect(orders).not.toContain('ALPHA-ORDER-1');

    const limitedAdmin = await admin.post('/users', {
      _csrf: csrf,
      name: 'boss',
      role: 'admin',
      password: PASSWORD,
      accounts: 'alpha',
    });
    expect(limitedAdmin.status).toBe(409);
    expect(limitedAdmin.body).toContain('an admin sees every account');
    const unknown = await admin.post('/users', {
      _csrf: csrf,
      name: 'gus',
      role: 'viewer',
      password: PASSWORD,
      accounts: 'gamma',
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toContain(
      'accounts: &quot;gamma&quot; is not an account of this deployment (alpha, beta)',
    );
    expect(await console.store.people.findByName('boss')).toBeNull();
    expect(await console.store.people.findByName('gus')).toBeNull();
  });
});
