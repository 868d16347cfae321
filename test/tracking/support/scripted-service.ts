/**
 * A stand-in purchase service on port 0 whose tracking answers follow a script, for reports the sandbox
 * never produces (a status going back). Real HTTP; the client under test is the real one.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export type TrackingStatus = 'pending' | 'partial' | 'paid' | 'withdrawn' | 'settled';

export function trackingBody(orderId: string, status: TrackingStatus, received: number, withdrawn = 0) {
  return {
    orderId,
    settlementStatus: status,
    expectedAmount: 1000,
    receivedAmount: received,
    withdrawnAmount: withdrawn,
    withdrawal: {
      type: 'crypto',
      status: withdrawn > 0 ? 'sent' : 'pending',
      transactionId: withdrawn > 0 ? 'ab12' : null,
      token: 'USDT',
      network: 'tron',
      fromAddress: null,
      toAddress: null,
      amount: withdrawn > 0 ? withdrawn : null,
      blockNumber: null,
      finishedAt: null,
    },
  };
}

export async function startScriptedService() {
  /** Per order id: the answers still to give; the last one repeats. */
  const scripts = new Map<string, unknown[]>();
  const served: string[] = [];
  const server = createServer((request, response) => {
    const match = /^\/client\/orders\/([^/]+)\/tracking$/.exec(request.url ?? '');
    const script = match ? scripts.get(decodeURIComponent(match[1]!)) : undefined;
    if (!match || !script || script.length === 0) {
      response.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"not found"}');
      return;
    }
    served.push(match[1]!);
    const body = script.length > 1 ? script.shift() : script[0];
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    served,
    /** The answers for one order, each naming that order (as the service's answers do). */
    script(orderId: string, answers: unknown[]) {
      scripts.set(
        orderId,
        answers.map((answer) => ({ ...(answer as Record<string, unknown>), orderId })),
      );
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
