import fc from 'fast-check';
import { pack } from 'msgpackr';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/index.js';
import { call } from './http.js';

let sandbox: RunningSandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ stepMs: 0, bodyLimit: 4096 });
});
afterAll(() => sandbox.close());

const ROUTES: [string, string][] = [
  ['POST', '/client/order'],
  ['POST', '/client/webhook/config'],
  ['PUT', '/_sandbox/faults'],
  ['GET', '/client/quote'],
  ['GET', '/client/orders'],
  ['GET', '/client/webhook/order/logs'],
  ['GET', '/client/webhook/logs'],
];

describe('sandbox robustness', () => {
  it('answers any body, in either format, with a 2xx or a 4xx carrying the error shape', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...ROUTES.filter(([method]) => method !== 'GET')),
        fc.jsonValue(),
        fc.boolean(),
        async ([method, path], value, msgpack) => {
          const raw = msgpack ? pack(value) : JSON.stringify(value);
          const answer = await call(sandbox.url, method, path, { raw, format: msgpack ? 'msgpack' : 'json' });
          expect(answer.status).toBeLessThan(500);
          if (answer.status >= 400) expect(answer.body).toMatchObject({ statusCode: answer.status });
        },
      ),
      { numRuns: 150 },
    );
  });

  it('answers any query string with a 2xx or a 4xx', async () => {
    const param = fc.constantFrom(
      'symbols',
      'amount',
      'limit',
      'offset',
      'status',
      'from',
      'to',
      'page',
      'pageSize',
      'symbol',
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...ROUTES.filter(([method]) => method === 'GET')),
        fc.array(fc.tuple(param, fc.string()), { maxLength: 4 }),
        async ([, path], pairs) => {
          const query = new URLSearchParams(pairs).toString();
          const answer = await call(sandbox.url, 'GET', `${path}?${query}`);
          expect(answer.status).toBeLessThan(500);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('answers random bytes as a body with a 4xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ minLength: 1, maxLength: 64 }),
        fc.boolean(),
        async (bytes, msgpack) => {
          const answer = await call(sandbox.url, 'POST', '/client/order', {
            raw: Buffer.from(bytes),
            format: msgpack ? 'msgpack' : 'json',
          });
          expect(answer.status).toBeGreaterThanOrEqual(400);
          expect(answer.status).toBeLessThan(500);
        },
      ),
      { numRuns: 150 },
    );
  });
});
