/**
 * A stand-in purchase service on port 0 that lists a fixed set of orders, for answers the sandbox never
 * gives (two orders carrying the same quoteId). Real HTTP; the client under test is the real one.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ListedOrder {
  id: string;
  amount: number;
  symbol: string;
  price: string;
  side: 'BUY';
  timestamp: string;
  status: 'pending';
  quoteId: string;
}

export async function startListingService(orders: ListedOrder[]) {
  const server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0]!;
    const json = (status: number, body: unknown) =>
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (path === '/client/orders') {
      json(200, { data: orders, pagination: { page: 1, limit: 100, total: orders.length, totalPages: 1 } });
      return;
    }
    const match = /^\/client\/orders\/([^/]+)$/.exec(path);
    const order = match
      ? orders.find((candidate) => candidate.id === decodeURIComponent(match[1]!))
      : undefined;
    if (order) json(200, order);
    else json(404, { statusCode: 404, error: 'Not Found', message: 'no such order' });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
