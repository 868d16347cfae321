import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONSOLE_ACTIONS } from '../../src/console/actions.js';
import { allows } from '../../src/console/permissions.js';
import { ROLES, type Role } from '../../src/db/index.js';
import { Decimal } from '../../src/money.js';
import { type ConsoleClient, loggedIn, PASSWORD, type RunningConsole, startTestConsole } from './support.js';

const STRATEGY = 'role-dca';
/** Unsure cycles live in a strategy of their own: those a role may not settle would block resuming STRATEGY. */
const UNSURE = 'role-unsure';

/**
 * Every role against every action the console offers, over HTTP with a valid session and CSRF token: the
 * server does what the role allows (and writes the audit row naming the person) and refuses the rest with
 * 403, changing nothing, even when the request is forged by hand rather than made from a page's button.
 */
describe('console roles × actions', () => {
  let console: RunningConsole;
  const clients = new Map<Role, ConsoleClient>();
  let slotSeconds = 0;

  async function unsureCycle(): Promise<number> {
    const { database } = console.test;
    const cycle = await database.cycles.claimSlot({
      strategy: UNSURE,
      account: 'default',
      slot: new Date(Date.UTC(2026, 0, 1, 0, 0, slotSeconds++)),
      trigger: 'schedule',
      owner: 'test',
    });
    if (!cycle) throw new Error('slot not claimed');
    await database.cycles.transition(cycle.id, 'claimed', 'submitting');
    await database.cycles.transition(cycle.id, 'submitting', 'unsure');
    return cycle.id;
  }

  /** A fresh subject for one attempt, so that an allowed attempt can succeed. */
  async function attempt(path: string, role: Role): Promise<{ path: string; form: Record<string, string> }> {
    switch (path) {
      case '/strategies/:name/pause':
      case '/strategies/:name/resume':
        return { path: path.replace(':name', STRATEGY), form: {} };
      case '/cycles/:id/not-placed':
        return { path: path.replace(':id', String(await unsureCycle())), form: {} };
      case '/cycles/:id/adopt': {
        // An order the service has and we do not: placed at the sandbox by hand.
        const quote = await console.client.getQuote({ symbol: 'USDTBRL', amount: new Decimal('100.00') });
        const order = await console.client.createOrder({ quoteId: quote.quoteId });
        return { path: path.replace(':id', String(await unsureCycle())), form: { order: order.id } };
      }
      case '/orders/:id/acknowledge': {
        const id = `EXTERNAL-${role}-${slotSeconds++}`;
        await console.test.database.orders.recordExternal({
          account: 'default',
          id,
          symbol: 'USDTBRL',
          amount: new Decimal('100.00'),
          price: new Decimal('5.40'),
          side: 'buy',
          timestamp: new Date(),
        });
        return { path: path.replace(':id', id), form: { note: 'placed by the desk', account: 'default' } };
      }
      case '/users':
        return {
          path,
          form: { name: `new-by-${role}-${slotSeconds++}`, role: 'viewer', password: PASSWORD },
        };
      case '/users/:name/disable': {
        const name = `target-of-${role}-${slotSeconds++}`;
        const passwordHash = (await console.store.people.findByName('viewer'))!.passwordHash!;
        await console.store.people.add({ name, role: 'viewer', passwordHash }, 'test-setup');
        return { path: path.replace(':name', name), form: {} };
      }
      default:
        return { path, form: {} };
    }
  }

  beforeAll(async () => {
    console = await startTestConsole();
    await console.test.database.strategies.upsertSeen([
      {
        name: STRATEGY,
        kind: 'dca',
        account: 'default',
        config: { name: STRATEGY, schedule: '0 10 * * *', timezone: 'UTC' },
        hash: 'h',
      },
      { name: UNSURE, kind: 'dca', account: 'default', config: { name: UNSURE }, hash: 'h' },
    ]);
    for (const role of ROLES) clients.set(role, await loggedIn(console, role));
  }, 60_000);

  afterAll(async () => {
    await console?.close();
  });

  it('covers every action of the table', () => {
    expect(CONSOLE_ACTIONS.map((a) => a.path)).toEqual([
      '/kill-switch/pause',
      '/kill-switch/resume',
      '/strategies/:name/pause',
      '/strategies/:name/resume',
      '/cycles/:id/not-placed',
      '/cycles/:id/adopt',
      '/orders/:id/acknowledge',
      '/users',
      '/users/:name/disable',
    ]);
  });

  const cases = ROLES.flatMap((role) => CONSOLE_ACTIONS.map((action) => ({ role, action })));
  it.each(cases)('$role → $action.path', async ({ role, action }) => {
    const client = clients.get(role)!;
    const { path, form } = await attempt(action.path, role);
    const csrf = await client.csrfFrom('/strategies');
    const before = await console.store.audit.list({ limit: 1 });
    const answer = await client.post(path, { ...form, _csrf: csrf, back: '/attention' });
    const [latest] = await console.store.audit.list({ limit: 1 });
    if (allows(role, action.permission)) {
      expect(answer.status, answer.body).toBe(303);
      expect(answer.location).toBe('/attention');
      expect(latest?.actor).toBe(role);
      expect(latest?.id).toBeGreaterThan(before[0]?.id ?? 0);
    } else {
      expect(answer.status).toBe(403);
      expect(answer.body).toContain(`a ${role} may not do this`);
      expect(latest?.id).toBe(before[0]?.id);
    }
  });

  it('refuses every action without a session (401), whatever the form carries', async () => {
    const stranger = clients.get('admin')!;
    for (const action of CONSOLE_ACTIONS) {
      const { path, form } = await attempt(action.path, 'admin');
      const answer = await fetch(`${console.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ ...form, _csrf: await stranger.csrfFrom('/') }).toString(),
        redirect: 'manual',
      });
      expect(answer.status, path).toBe(401);
    }
  });

  it.each(ROLES)('pages a %s may read', async (role) => {
    const client = clients.get(role)!;
    const cycle = await unsureCycle();
    for (const path of [
      '/',
      '/strategies',
      '/orders',
      '/orders.csv',
      '/attention',
      '/live',
      `/cycles/${cycle}`,
    ]) {
      expect((await client.get(path)).status, path).toBe(200);
    }
    for (const path of ['/audit', '/users']) {
      expect((await client.get(path)).status, path).toBe(allows(role, 'administer') ? 200 : 403);
    }
  });

  it('answers the links of notifications: a strategy, an order of a cycle', async () => {
    const viewer = clients.get('viewer')!;
    const strategy = await viewer.get(`/strategies/${STRATEGY}`);
    expect(strategy.status).toBe(303);
    expect(strategy.location).toBe(`/strategies#${STRATEGY}`);
    expect((await viewer.get('/orders/no-such-order')).status).toBe(404);
  });

  it('the cycle settled by hand is recorded not placed with the operator reason', async () => {
    const id = await unsureCycle();
    const client = clients.get('operator')!;
    await client.post(`/cycles/${id}/not-placed`, { _csrf: await client.csrfFrom('/attention') });
    const cycle = await console.test.database.cycles.get(id);
    expect(cycle?.state).toBe('not_placed');
    expect(cycle?.reasonCode).toBe('operator_resolved');
  });
});
