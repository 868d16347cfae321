import { unpack } from 'msgpackr';
import { afterEach, describe, expect, it } from 'vitest';
import { type RunningSandbox, type SandboxOptions, startSandbox } from '../../src/sandbox/index.js';
import { call } from './http.js';

const running: RunningSandbox[] = [];
async function start(options: SandboxOptions = {}): Promise<RunningSandbox> {
  const sandbox = await startSandbox({ stepMs: 0, ...options });
  running.push(sandbox);
  return sandbox;
}
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.close()));
});

const QUOTE = '/client/quote?symbols=USDTBRL&amount=100';

async function quoteId(sandbox: RunningSandbox): Promise<string> {
  return (await call(sandbox.url, 'GET', QUOTE)).body.quoteId;
}

describe('sandbox fault injection', () => {
  it('adds latency to every response of a route', async () => {
    const sandbox = await start({ faults: { quote: { latencyMs: 120 } } });
    const began = performance.now();
    expect((await call(sandbox.url, 'GET', QUOTE)).status).toBe(200);
    expect(performance.now() - began).toBeGreaterThanOrEqual(115);
    const other = performance.now();
    await call(sandbox.url, 'GET', '/client/balance');
    expect(performance.now() - other).toBeLessThan(100);
  });

  it('answers 500 at the error rate, before any side effect', async () => {
    const sandbox = await start({ faults: { createOrder: { errorRate: 1 } } });
    const id = await quoteId(sandbox);
    const answer = await call(sandbox.url, 'POST', '/client/order', { body: { quoteId: id } });
    expect(answer.status).toBe(500);
    expect(answer.body).toEqual({
      statusCode: 500,
      error: 'Internal Server Error',
      message: expect.any(String),
    });
    expect(sandbox.ledger()).toEqual([]);
    sandbox.setFaults({});
    expect((await call(sandbox.url, 'POST', '/client/order', { body: { quoteId: id } })).status).toBe(200);
  });

  it('resets the connection without a side effect', async () => {
    const sandbox = await start({ faults: { createOrder: { resetRate: 1 } } });
    const id = await quoteId(sandbox);
    await expect(call(sandbox.url, 'POST', '/client/order', { body: { quoteId: id } })).rejects.toMatchObject(
      {
        code: expect.stringMatching(/ECONNRESET|UND_ERR_SOCKET/),
      },
    );
    expect(sandbox.ledger()).toEqual([]);
  });

  it('accepts the order, then drops the connection: the order exists but the client sees a reset', async () => {
    const sandbox = await start({ faults: { createOrder: { acceptThenDropRate: 1 } } });
    const id = await quoteId(sandbox);
    await expect(call(sandbox.url, 'POST', '/client/order', { body: { quoteId: id } })).rejects.toMatchObject(
      {
        code: expect.stringMatching(/ECONNRESET|UND_ERR_SOCKET/),
      },
    );
    expect(sandbox.ledger().map((o) => o.quoteId)).toEqual([id]);
    const listed = await call(sandbox.url, 'GET', '/client/orders');
    expect(listed.body.data.map((o: { quoteId: string }) => o.quoteId)).toEqual([id]);
    // A refused creation (used quote) is answered normally: only accepted orders are dropped.
    expect((await call(sandbox.url, 'POST', '/client/order', { body: { quoteId: id } })).status).toBe(400);
  });

  it('delays a share of responses by slowMs, and close() does not wait for them', async () => {
    const sandbox = await start({ faults: { quote: { slowRate: 1, slowMs: 200 } } });
    const began = performance.now();
    expect((await call(sandbox.url, 'GET', QUOTE)).status).toBe(200);
    expect(performance.now() - began).toBeGreaterThanOrEqual(195);

    // The order is booked before the delay, so the ledger shows when the slow answer is being held back.
    const id = await quoteId(sandbox);
    sandbox.setFaults({ createOrder: { slowRate: 1, slowMs: 60_000 } });
    const pending = call(sandbox.url, 'POST', '/client/order', { body: { quoteId: id } }).catch(
      (error: unknown) => error,
    );
    await expect.poll(() => sandbox.ledger().length).toBe(1);
    const closing = performance.now();
    await sandbox.close();
    expect(performance.now() - closing).toBeLessThan(2_000);
    await pending;
  });

  it('serves each kind of malformed body', async () => {
    const sandbox = await start();
    const malformedQuote = async (malformed: string, format: 'json' | 'msgpack' = 'json') => {
      sandbox.setFaults({ quote: { malformedRate: 1, malformed: malformed as 'syntax' } });
      const answer = await call(sandbox.url, 'GET', QUOTE, { format });
      expect(answer.status).toBe(200);
      return answer.bytes;
    };
    const syntaxJson = await malformedQuote('syntax');
    expect(() => JSON.parse(syntaxJson.toString())).toThrow();
    const syntaxMsgpack = await malformedQuote('syntax', 'msgpack');
    expect(() => unpack(syntaxMsgpack)).toThrow();
    const truncatedJson = await malformedQuote('truncate');
    expect(() => JSON.parse(truncatedJson.toString())).toThrow();
    const truncatedMsgpack = await malformedQuote('truncate', 'msgpack');
    expect(() => unpack(truncatedMsgpack)).toThrow();
    const types = JSON.parse((await malformedQuote('types')).toString());
    expect(typeof types.price).toBe('number');
    expect(typeof types.expiresIn).toBe('string');
    expect(JSON.parse((await malformedQuote('nan-price')).toString()).price).toBe('NaN');
    expect(JSON.parse((await malformedQuote('negative-price')).toString()).price).toMatch(/^-\d+\.\d{4}$/);
    // List items are corrupted too.
    await call(sandbox.url, 'POST', '/client/order', {
      body: { quoteId: await quoteIdWithoutFaults(sandbox) },
    });
    sandbox.setFaults({ listOrders: { malformedRate: 1, malformed: 'nan-price' } });
    expect((await call(sandbox.url, 'GET', '/client/orders')).body.data[0].price).toBe('NaN');
  });

  it('decides faults with a seeded generator: same seed, same decisions', async () => {
    const statuses = async (seed: number) => {
      const sandbox = await start({ seed, faults: { balance: { errorRate: 0.5 } } });
      const out: number[] = [];
      for (let i = 0; i < 40; i++) out.push((await call(sandbox.url, 'GET', '/client/balance')).status);
      return out;
    };
    const first = await statuses(3);
    expect(await statuses(3)).toEqual(first);
    const failures = first.filter((s) => s === 500).length;
    expect(failures).toBeGreaterThan(8);
    expect(failures).toBeLessThan(32);
  });

  it('applies "*" to every service route, lets a route override it, and never touches the control API', async () => {
    const sandbox = await start({ faults: { '*': { errorRate: 1 }, quote: { errorRate: 0 } } });
    expect((await call(sandbox.url, 'GET', '/client/balance')).status).toBe(500);
    expect((await call(sandbox.url, 'GET', '/client/webhook/logs')).status).toBe(500);
    expect((await call(sandbox.url, 'GET', QUOTE)).status).toBe(200);
    expect((await call(sandbox.url, 'GET', '/_sandbox/ledger')).status).toBe(200);
  });
});

describe('sandbox fault control API', () => {
  it('reads and replaces the fault config, refusing an invalid one with 400', async () => {
    const sandbox = await start();
    const config = { balance: { errorRate: 1 }, '*': { latencyMs: 1 } };
    const put = await call(sandbox.url, 'PUT', '/_sandbox/faults', { body: config });
    expect(put.status).toBe(200);
    expect(put.body).toEqual(config);
    expect((await call(sandbox.url, 'GET', '/_sandbox/faults')).body).toEqual(config);
    expect((await call(sandbox.url, 'GET', '/client/balance')).status).toBe(500);
    for (const bad of [
      { balance: { errorRate: 2 } },
      { nowhere: {} },
      { quote: { malformed: 'weird' } },
      { quote: { bogus: 1 } },
    ]) {
      const answer = await call(sandbox.url, 'PUT', '/_sandbox/faults', { body: bad });
      expect(answer.status, JSON.stringify(bad)).toBe(400);
      expect(answer.body.message).toMatch(/invalid fault config/);
    }
    expect((await call(sandbox.url, 'GET', '/_sandbox/faults')).body).toEqual(config);
    await call(sandbox.url, 'PUT', '/_sandbox/faults', { body: {} });
    expect((await call(sandbox.url, 'GET', '/client/balance')).status).toBe(200);
    expect(() => sandbox.setFaults({ quote: { errorRate: -1 } })).toThrow();
  });
});

async function quoteIdWithoutFaults(sandbox: RunningSandbox): Promise<string> {
  sandbox.setFaults({});
  return quoteId(sandbox);
}
