import { afterEach, describe, expect, it } from 'vitest';
import { Decimal } from '../../src/money.js';
import {
  credentialFingerprint,
  type RunningSandbox,
  type SandboxOptions,
  SandboxOptionsError,
  startSandbox,
} from '../../src/sandbox/index.js';
import { call } from './http.js';
import { startReceiver } from './receiver.js';

const A = 'token-of-acme';
const A_READ = 'read-token-of-acme';
const B = 'token-of-bravo';
const ADMIN = 'sandbox-admin-token';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Two entities: acme with a small credit line and a read token, bravo on the sandbox's default line. */
async function start(options: SandboxOptions = {}): Promise<RunningSandbox> {
  const sandbox = await startSandbox({
    stepMs: 0,
    adminToken: ADMIN,
    creditLimit: '5000.00',
    webhookRetryDelaysMs: [10],
    accounts: [
      { name: 'acme', token: A, readTokens: [A_READ], creditLimit: '1000.00' },
      { name: 'bravo', token: B },
    ],
    ...options,
  });
  cleanups.push(() => sandbox.close());
  return sandbox;
}

async function receiver() {
  const r = await startReceiver();
  cleanups.push(r.close);
  return r;
}

async function quote(sandbox: RunningSandbox, token: string, amount = '500') {
  const answer = await call(sandbox.url, 'GET', `/client/quote?symbols=USDTBRL&amount=${amount}`, { token });
  expect(answer.status).toBe(200);
  return answer.body as { quoteId: string; totalCost: string };
}

async function placeOrder(sandbox: RunningSandbox, token: string, amount = '500') {
  const { quoteId } = await quote(sandbox, token, amount);
  const answer = await call(sandbox.url, 'POST', '/client/order', { token, body: { quoteId } });
  expect(answer.status).toBe(200);
  return answer.body as { id: string };
}

async function credit(sandbox: RunningSandbox, token: string) {
  return (await call(sandbox.url, 'GET', '/client/balance', { token })).body.credit;
}

describe('a sandbox with several accounts', () => {
  it('keeps separate order lists, balances and credit lines: an order by A lowers only A’s credit', async () => {
    const sandbox = await start();
    expect(sandbox.accounts).toEqual(['acme', 'bravo']);
    expect(await credit(sandbox, A)).toEqual({ total: '1000.00', used: '0.00', available: '1000.00' });
    expect(await credit(sandbox, B)).toEqual({ total: '5000.00', used: '0.00', available: '5000.00' });

    const order = await placeOrder(sandbox, A);
    const cost = sandbox.ledger('acme')[0]!.totalCost;
    const acme = await credit(sandbox, A);
    expect(acme.used).toBe(cost);
    expect(acme.available).toBe(new Decimal('1000.00').minus(cost).toFixed(2));
    expect(await credit(sandbox, A_READ)).toEqual(acme);
    expect(await credit(sandbox, B)).toEqual({ total: '5000.00', used: '0.00', available: '5000.00' });

    const listA = await call(sandbox.url, 'GET', '/client/orders', { token: A_READ });
    expect(listA.body.data.map((o: { id: string }) => o.id)).toEqual([order.id]);
    const listB = await call(sandbox.url, 'GET', '/client/orders', { token: B });
    expect(listB.body.data).toEqual([]);
    expect((await call(sandbox.url, 'GET', `/client/orders/${order.id}`, { token: B })).status).toBe(404);
    expect((await call(sandbox.url, 'GET', `/client/orders/${order.id}/tracking`, { token: B })).status).toBe(
      404,
    );
    expect(sandbox.ledger('acme').map((o) => o.id)).toEqual([order.id]);
    expect(sandbox.ledger('bravo')).toEqual([]);

    // Only A's line runs out: a second order of 600 does not fit A's 1000, and fits B's 5000.
    const { quoteId } = await quote(sandbox, A, '600');
    const refused = await call(sandbox.url, 'POST', '/client/order', { token: A, body: { quoteId } });
    expect(refused.status).toBe(400);
    expect(refused.body.message).toMatch(/insufficient credit/);
    await placeOrder(sandbox, B, '600');
    expect((await credit(sandbox, A)).used).toBe(cost);
  });

  it('refuses a quote id issued to A when B uses it, as any unknown quote, and leaves it usable by A', async () => {
    const sandbox = await start();
    const { quoteId } = await quote(sandbox, A);
    const byB = await call(sandbox.url, 'POST', '/client/order', { token: B, body: { quoteId } });
    expect(byB.status).toBe(400);
    expect(byB.body.message).toBe(`unknown quoteId ${quoteId}`);
    expect(sandbox.ledger('bravo')).toEqual([]);
    const byA = await call(sandbox.url, 'POST', '/client/order', { token: A, body: { quoteId } });
    expect(byA.status).toBe(200);
  });

  it('gives a read token its account and no more than reading', async () => {
    const sandbox = await start();
    const { quoteId } = await quote(sandbox, A_READ);
    const answer = await call(sandbox.url, 'POST', '/client/order', { token: A_READ, body: { quoteId } });
    expect(answer.status).toBe(403);
    // The read token's quote was issued to acme: acme's full token can order it.
    expect((await call(sandbox.url, 'POST', '/client/order', { token: A, body: { quoteId } })).status).toBe(
      200,
    );
  });

  it('sends the webhooks of A only to A’s URL and logs them only in A’s delivery log', async () => {
    const sandbox = await start();
    const hookA = await receiver();
    const hookB = await receiver();
    for (const [token, url] of [
      [A, hookA.url],
      [B, hookB.url],
    ] as const) {
      const set = await call(sandbox.url, 'POST', '/client/webhook/config', {
        token,
        body: { url, webhook: { methodId: 'order', active: true } },
      });
      expect(set.status).toBe(200);
    }
    expect((await call(sandbox.url, 'GET', '/client/webhook/config', { token: A_READ })).body.url).toBe(
      hookA.url,
    );
    const orderA = await placeOrder(sandbox, A);
    await hookA.waitFor(1);
    const orderB = await placeOrder(sandbox, B);
    await hookB.waitFor(1);
    await expect
      .poll(
        async () => (await call(sandbox.url, 'GET', '/client/webhook/logs', { token: B })).body.data.length,
      )
      .toBe(1);
    expect(hookA.received.map((r) => r.body.data.id)).toEqual([orderA.id]);
    expect(hookB.received.map((r) => r.body.data.id)).toEqual([orderB.id]);
    const logsA = (await call(sandbox.url, 'GET', '/client/webhook/order/logs', { token: A })).body.data;
    expect(
      logsA.map((entry: { url: string; payload: { data: { id: string } } }) => entry.payload.data.id),
    ).toEqual([orderA.id]);
    expect(logsA[0].url).toBe(hookA.url);
  });

  it('records the account and a fingerprint of each request’s credential, never the credential', async () => {
    const sandbox = await start();
    await quote(sandbox, A);
    await call(sandbox.url, 'GET', '/client/balance', { token: A_READ });
    await call(sandbox.url, 'GET', '/client/orders?status=pending', { token: B });
    expect((await call(sandbox.url, 'GET', '/client/balance', { token: 'nobody' })).status).toBe(401);
    expect((await call(sandbox.url, 'GET', '/client/balance', { token: null })).status).toBe(401);
    const seen = sandbox.requests().map(({ method, path, account, credential }) => ({
      method,
      path,
      account,
      credential,
    }));
    expect(seen).toEqual([
      { method: 'GET', path: '/client/quote', account: 'acme', credential: credentialFingerprint(A) },
      { method: 'GET', path: '/client/balance', account: 'acme', credential: credentialFingerprint(A_READ) },
      { method: 'GET', path: '/client/orders', account: 'bravo', credential: credentialFingerprint(B) },
      {
        method: 'GET',
        path: '/client/balance',
        account: 'unknown',
        credential: credentialFingerprint('nobody'),
      },
      { method: 'GET', path: '/client/balance', account: 'unknown', credential: null },
    ]);
    expect(sandbox.requests()[0]!.at).toMatch(/^\d{4}-\d{2}-\d{2}T/);

    const overHttp = await call(sandbox.url, 'GET', '/_sandbox/requests', { token: ADMIN });
    expect(overHttp.status).toBe(200);
    // The control API's own request is in the log too, under no account.
    expect(overHttp.body.requests.slice(0, -1)).toEqual(sandbox.requests().slice(0, -1));
    expect(overHttp.body.requests.at(-1)).toMatchObject({
      path: '/_sandbox/requests',
      account: 'unknown',
      credential: credentialFingerprint(ADMIN),
    });
    const text = JSON.stringify(overHttp.body);
    for (const token of [A, A_READ, B, ADMIN, 'nobody']) expect(text).not.toContain(token);
    expect((await call(sandbox.url, 'GET', '/_sandbox/requests', { token: A })).status).toBe(403);
  });

  it('keeps only the last requests the log is sized for, oldest first', async () => {
    const sandbox = await start({ requestLogSize: 3 });
    for (const token of [A, B, A_READ, B]) await call(sandbox.url, 'GET', '/client/balance', { token });
    expect(sandbox.requests().map((entry) => entry.credential)).toEqual(
      [B, A_READ, B].map(credentialFingerprint),
    );
  });

  it('shows one account’s ledger and every account’s credit on the control API, the first by default', async () => {
    const sandbox = await start();
    const orderA = await placeOrder(sandbox, A);
    const orderB = await placeOrder(sandbox, B);
    const ledger = (query: string) => call(sandbox.url, 'GET', `/_sandbox/ledger${query}`, { token: ADMIN });
    expect((await ledger('')).body.orders.map((o: { id: string }) => o.id)).toEqual([orderA.id]);
    expect((await ledger('?account=bravo')).body.orders.map((o: { id: string }) => o.id)).toEqual([
      orderB.id,
    ]);
    const unknown = await ledger('?account=charlie');
    expect(unknown.status).toBe(404);
    expect(unknown.body.message).toBe('unknown account "charlie"; expected one of acme, bravo');

    // Stepping finds the order in whichever account holds it.
    const step = await call(sandbox.url, 'POST', `/_sandbox/orders/${orderB.id}/step`, { token: ADMIN });
    expect(step.body.status).toBe('partial');
    await sandbox.step(orderB.id);
    const accounts = (await call(sandbox.url, 'GET', '/_sandbox/accounts', { token: ADMIN })).body.accounts;
    expect(accounts.map((a: { name: string; orders: number }) => [a.name, a.orders])).toEqual([
      ['acme', 1],
      ['bravo', 1],
    ]);
    expect(accounts[0].balance).toEqual(
      (await call(sandbox.url, 'GET', '/client/balance', { token: A })).body,
    );
    expect(accounts[1].balance).toEqual(
      (await call(sandbox.url, 'GET', '/client/balance', { token: B })).body,
    );
    expect(accounts[1].balance.credit.used).toBe('0.00');
    expect(accounts[0].balance.credit.used).not.toBe('0.00');
  });

  it('serves one account named default when started with tokens, as before', async () => {
    const sandbox = await startSandbox({ stepMs: 0, tokens: ['t1', 't2'], readTokens: ['r1'] });
    cleanups.push(() => sandbox.close());
    expect(sandbox.accounts).toEqual(['default']);
    const order = await placeOrder(sandbox, 't2');
    expect((await call(sandbox.url, 'GET', `/client/orders/${order.id}`, { token: 'r1' })).status).toBe(200);
    expect(sandbox.requests().map((entry) => entry.account)).toEqual(['default', 'default', 'default']);
    // The control API's token defaults to the first token, which still acts as the account too.
    expect((await call(sandbox.url, 'GET', '/_sandbox/ledger', { token: 't1' })).body.orders).toHaveLength(1);
    expect(sandbox.requests().at(-1)!.account).toBe('default');
  });

  it('refuses accounts it cannot tell apart or name, naming the option and never a token', async () => {
    const cases: [SandboxOptions, RegExp][] = [
      [{ accounts: [{ name: 'a', token: A }], tokens: [B] }, /either accounts or tokens\/readTokens/],
      [{ accounts: [] }, /at least one account/],
      [
        { accounts: [{ name: 'Acme', token: A }] },
        /account name "Acme" must be lowercase letters, digits and hyphens/,
      ],
      [
        {
          accounts: [
            { name: 'a', token: A },
            { name: 'a', token: B },
          ],
        },
        /account a is listed twice/,
      ],
      [
        {
          accounts: [
            { name: 'a', token: A },
            { name: 'b', token: B, readTokens: [A] },
          ],
        },
        /accounts a and b share a token/,
      ],
      [{ accounts: [{ name: 'a', token: '' }] }, /account a: a token must be non-empty/],
      [
        { accounts: [{ name: 'a', token: A, creditLimit: 'lots' }] },
        /creditLimit of account a: expected decimal text/,
      ],
      [{ requestLogSize: 0 }, /requestLogSize must be a whole number of at least 1/],
    ];
    for (const [options, message] of cases) {
      const error = await startSandbox(options).then(
        (sandbox) => sandbox.close().then(() => undefined),
        (thrown: unknown) => thrown,
      );
      expect(error, JSON.stringify(options)).toBeInstanceOf(Error);
      expect((error as Error).message).toMatch(message);
      expect((error as Error).message).not.toContain(A);
    }
    const shared = await startSandbox({
      accounts: [
        { name: 'a', token: A },
        { name: 'b', token: A },
      ],
    }).catch((thrown: unknown) => thrown);
    expect(shared).toBeInstanceOf(SandboxOptionsError);
  });
});
