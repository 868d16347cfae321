import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPurchaseClient, type PurchaseClient } from '../../src/api/index.js';
import type { Database } from '../../src/db/index.js';
import { EVERY_ACCOUNT } from '../../src/db/index.js';
import { recordStrategiesSeen, runCycle } from '../../src/engine/index.js';
import { DEMO_TOKEN } from '../../src/sandbox/index.js';
import { type EngineBench, freshSlot, onClient, startEngineBench, strategy } from './support/harness.js';

/**
 * Invariant 2, seen from the wire: when the order request reaches the service, the cycle is already
 * `submitting` in the database, with the quote the request carries, as a read through the pool sees it.
 */
describe('the intent is committed before the order request leaves', () => {
  let bench: EngineBench;
  let relay: Awaited<ReturnType<typeof startOrderRelay>>;
  let client: PurchaseClient;

  beforeAll(async () => {
    bench = await startEngineBench();
    relay = await startOrderRelay(bench.sandbox.url, bench.database, 'intent-first');
    client = createPurchaseClient({ baseUrl: relay.url, token: DEMO_TOKEN });
  });
  afterAll(async () => {
    await client.close();
    await relay.close();
    await bench.close();
  });

  it('finds the cycle submitting with its quote when the order arrives', async () => {
    const buyer = strategy({ name: 'intent-first' });
    const context = onClient(bench.context, client);
    await recordStrategiesSeen(context, [buyer]);
    const report = await runCycle(context, { strategy: buyer, slot: freshSlot(), trigger: 'once' });
    expect(report.outcome).toBe('placed');
    expect(relay.seen).toEqual([
      { state: 'submitting', quoteId: report.quoteId, sentQuoteId: report.quoteId },
    ]);
  });
});

/**
 * A relay in front of the sandbox: every request passes through unchanged, except that on the order
 * request it first reads the watched strategy's newest cycle through the database's own pool.
 */
async function startOrderRelay(target: string, database: Database, watched: string) {
  const seen: { state: string | null; quoteId: string | null; sentQuoteId: unknown }[] = [];
  const server = createServer(async (incoming, outgoing) => {
    const chunks: Buffer[] = [];
    for await (const chunk of incoming) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    if (incoming.method === 'POST' && incoming.url === '/client/order') {
      const [cycle] = await database.cycles.listRecent(EVERY_ACCOUNT, { strategy: watched, limit: 1 });
      const sent = JSON.parse(body.toString()) as { quoteId?: unknown };
      seen.push({ state: cycle?.state ?? null, quoteId: cycle?.quoteId ?? null, sentQuoteId: sent.quoteId });
    }
    const answer = await request(`${target}${incoming.url}`, {
      method: incoming.method as 'GET' | 'POST',
      headers: incoming.headers,
      body: body.length > 0 ? body : undefined,
    });
    outgoing.writeHead(answer.statusCode, answer.headers as Record<string, string>);
    outgoing.end(Buffer.from(await answer.body.arrayBuffer()));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
