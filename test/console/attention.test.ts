import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerConsole } from '../../src/console/server.js';
import { Decimal } from '../../src/money.js';
import { createReceiverServer, listen } from '../../src/observability/http-server.js';
import { createLogger } from '../../src/observability/logger.js';
import { ConsoleClient, loggedIn, type RunningConsole, startTestConsole } from './support.js';

const STRATEGY = 'attention-dca';

/**
 * The Attention page's decisions on an unsure cycle, over HTTP: adopting the order the service has (read
 * from the real sandbox, recorded as the cycle's, audited with the person) or declaring none placed, with
 * the same refusals as `treasury-bot resolve`, each leaving the records and the audit log untouched.
 */
describe('console attention: adopt an order', () => {
  let console: RunningConsole;
  let operator: ConsoleClient;
  let slot = 0;

  async function unsureCycle(): Promise<number> {
    const { database } = console.test;
    const cycle = await database.cycles.claimSlot({
      strategy: STRATEGY,
      account: 'default',
      slot: new Date(Date.UTC(2026, 1, 1, 0, 0, slot++)),
      trigger: 'schedule',
      owner: 'test',
    });
    await database.cycles.transition(cycle!.id, 'claimed', 'submitting');
    await database.cycles.transition(cycle!.id, 'submitting', 'unsure');
    return cycle!.id;
  }

  /** An order the service has that no cycle recorded. */
  async function orderAtService(): Promise<string> {
    const quote = await console.client.getQuote({ symbol: 'USDTBRL', amount: new Decimal('250.00') });
    return (await console.client.createOrder({ quoteId: quote.quoteId })).id;
  }

  async function adopt(cycleId: number, order: string) {
    return operator.post(`/cycles/${cycleId}/adopt`, {
      _csrf: await operator.csrfFrom('/attention'),
      order,
      back: '/attention',
    });
  }

  async function lastAuditId() {
    return (await console.store.audit.list({ limit: 1 }))[0]?.id ?? 0;
  }

  beforeAll(async () => {
    console = await startTestConsole();
    await console.test.database.strategies.upsertSeen([
      { name: STRATEGY, kind: 'dca', account: 'default', config: { name: STRATEGY }, hash: 'h' },
    ]);
    operator = await loggedIn(console, 'operator');
  }, 60_000);

  afterAll(async () => {
    await console?.close();
  });

  it('lists the unsure cycle with both decisions for an operator, and none for a viewer', async () => {
    const id = await unsureCycle();
    const page = (await operator.get('/attention')).body;
    expect(page).toContain(`action="/cycles/${id}/adopt"`);
    expect(page).toContain(`action="/cycles/${id}/not-placed"`);
    const viewer = await loggedIn(console, 'viewer');
    const seen = (await viewer.get('/attention')).body;
    expect(seen).toContain(`href="/cycles/${id}"`);
    expect(seen).not.toContain(`/cycles/${id}/adopt`);
    await operator.post(`/cycles/${id}/not-placed`, { _csrf: await operator.csrfFrom('/attention') });
  });

  it('adopts the order: recorded from the service as the cycle’s, the cycle placed, the person audited', async () => {
    const id = await unsureCycle();
    const orderId = await orderAtService();
    const answer = await adopt(id, orderId);
    expect(answer.status, answer.body).toBe(303);
    const { database } = console.test;
    expect(await database.cycles.get(id)).toMatchObject({
      state: 'placed',
      reasonCode: 'operator_resolved',
      serviceOrderId: orderId,
    });
    const order = await database.orders.getByServiceId('default', orderId);
    expect(order).toMatchObject({ cycleId: id, origin: 'cycle' });
    expect(order?.amount.toFixed(2)).toBe('250.00');
    const [entry] = await console.store.audit.list({ limit: 1 });
    expect(entry).toMatchObject({
      actor: 'operator',
      action: 'cycle.adopt_order',
      subject: `cycle:${id}`,
      before: { state: 'unsure', strategy: STRATEGY },
      after: { state: 'placed', orderId, reasonCode: 'operator_resolved' },
    });
  });

  it('adopts an order the external scan had booked, which then leaves the external list', async () => {
    const id = await unsureCycle();
    const orderId = await orderAtService();
    const detail = await console.client.getOrder(orderId);
    await console.test.database.orders.recordExternal({
      ...detail,
      account: 'default',
      quoteId: detail.quoteId,
    });
    expect((await operator.get('/attention')).body).toContain(`<code>${orderId}</code>`);
    expect((await adopt(id, orderId)).status).toBe(303);
    expect(await console.test.database.orders.getByServiceId('default', orderId)).toMatchObject({
      cycleId: id,
      origin: 'cycle',
    });
    expect((await operator.get('/attention')).body).not.toContain(`<code>${orderId}</code>`);
  });

  it('refuses an order another cycle owns (409), changing nothing', async () => {
    const first = await unsureCycle();
    const second = await unsureCycle();
    const orderId = await orderAtService();
    expect((await adopt(first, orderId)).status).toBe(303);
    const before = await lastAuditId();
    const answer = await adopt(second, orderId);
    expect(answer.status).toBe(409);
    expect(answer.body).toContain(`order ${orderId} is already recorded for cycle ${first}`);
    expect((await console.test.database.cycles.get(second))?.state).toBe('unsure');
    expect(await lastAuditId()).toBe(before);
  });

  it('refuses a cycle that is not unsure (409), an order the service does not have (409) and a malformed id (400)', async () => {
    const id = await unsureCycle();
    const orderId = await orderAtService();
    await operator.post(`/cycles/${id}/not-placed`, { _csrf: await operator.csrfFrom('/attention') });
    const before = await lastAuditId();

    const settled = await adopt(id, orderId);
    expect(settled.status).toBe(409);
    expect(settled.body).toContain(`is &#39;not_placed&#39;, not unsure`);

    const other = await unsureCycle();
    const unknown = await adopt(other, 'NOSUCHORDER1');
    expect(unknown.status).toBe(409);
    expect(unknown.body).toContain('API_NOT_FOUND');

    const malformed = await adopt(other, '<script>x</script>');
    expect(malformed.status).toBe(400);
    expect(malformed.body).toContain(
      'order: &quot;&lt;script&gt;x&lt;/script&gt;&quot; is not a service order id',
    );
    expect(malformed.body).not.toContain('<script>x');

    expect((await console.test.database.cycles.get(other))?.state).toBe('unsure');
    expect(await console.test.database.orders.getByServiceId('default', orderId)).toBeNull();
    expect(await lastAuditId()).toBe(before);
  });

  it('says plainly that a console without the purchase service cannot adopt', async () => {
    const server = createReceiverServer();
    const logger = createLogger({
      level: 'silent',
      destination: new Writable({ write: (_c, _e, done) => done() }),
    });
    const { database } = console.test;
    // The deployment has its account, but no address and token for it here.
    registerConsole(server, {
      database,
      store: console.store,
      clock: () => new Date(),
      logger,
      accounts: new Map([['default', { name: 'default' }]]),
    });
    const port = await listen(server, '127.0.0.1', 0);
    try {
      const alone = new ConsoleClient(`http://127.0.0.1:${port}`);
      expect((await alone.login('operator')).status).toBe(303);
      const id = await unsureCycle();
      const answer = await alone.post(`/cycles/${id}/adopt`, {
        _csrf: await alone.csrfFrom('/attention'),
        order: await orderAtService(),
      });
      expect(answer.status).toBe(400);
      expect(answer.body).toContain(
        'the purchase service of account default, and this console has none: use the console of `treasury-bot run`, or give the account its url and token',
      );
      expect((await database.cycles.get(id))?.state).toBe('unsure');
    } finally {
      await server.close();
    }
  });

  describe('external orders', () => {
    async function external(id: string) {
      await console.test.database.orders.recordExternal({
        account: 'default',
        id,
        symbol: 'USDTBRL',
        amount: new Decimal('500.00'),
        price: new Decimal('5.41'),
        side: 'buy',
        timestamp: new Date(),
      });
    }
    async function acknowledge(id: string, note = '') {
      return operator.post(`/orders/${id}/acknowledge`, {
        _csrf: await operator.csrfFrom('/attention'),
        note,
        account: 'default',
        back: '/attention',
      });
    }

    it('acknowledges an external order once, audited with the note, and shows who did it', async () => {
      await external('EXT-ACK-1');
      const viewer = await loggedIn(console, 'viewer');
      const unseen = (await viewer.get('/attention')).body;
      expect(unseen).toMatch(/EXT-ACK-1<\/code>.*<strong>not acknowledged<\/strong>/s);
      expect(unseen).not.toContain('/orders/EXT-ACK-1/acknowledge');
      expect((await operator.get('/attention')).body).toContain('action="/orders/EXT-ACK-1/acknowledge"');

      expect((await acknowledge('EXT-ACK-1', 'placed by hand at the desk')).status).toBe(303);
      const [entry] = await console.store.audit.list({ limit: 1 });
      expect(entry).toMatchObject({
        actor: 'operator',
        action: 'order.acknowledge',
        subject: 'order:EXT-ACK-1',
        before: { origin: 'external', symbol: 'USDTBRL', amount: '500', price: '5.41' },
        after: { acknowledged: true, note: 'placed by hand at the desk' },
      });
      expect((await viewer.get('/attention')).body).toMatch(/EXT-ACK-1<\/code>.*acknowledged by operator/s);

      const again = await acknowledge('EXT-ACK-1');
      expect(again.status).toBe(409);
      expect(again.body).toContain('order EXT-ACK-1 was acknowledged by operator at');
      expect(await lastAuditId()).toBe(entry!.id);
    });

    it('refuses an order of a cycle and an order nobody recorded (409), writing nothing', async () => {
      const id = await unsureCycle();
      const orderId = await orderAtService();
      expect((await adopt(id, orderId)).status).toBe(303);
      const before = await lastAuditId();
      const ours = await acknowledge(orderId);
      expect(ours.status).toBe(409);
      expect(ours.body).toContain(`order ${orderId} is cycle ${id}&#39;s, not external`);
      const unknown = await acknowledge('NO-SUCH-ORDER');
      expect(unknown.status).toBe(409);
      expect(unknown.body).toContain('no order NO-SUCH-ORDER of account default is recorded');
      expect(await lastAuditId()).toBe(before);
    });
  });
});
