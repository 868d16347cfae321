/**
 * A stand-in purchase service on port 0 that lists a fixed set of orders, for answers the sandbox never
 * gives: two orders carrying the same quoteId, a list longer than the worker reads, a list that shifts
 * while it is read, a list that never comes. Real HTTP; the client under test is the real one.
 */
import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
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

export interface ListingOptions {
  /** Orders per page, whatever `limit` the client asks for (default 100). */
  pageSize?: number;
  /** Placed at the service right after page 1 is served: the list shifts down while the client reads. */
  arrivals?: ListedOrder[];
  /** GET /client/orders is taken and never answered (see `nextListRequest`). */
  silentList?: boolean;
}

export async function startListingService(initial: ListedOrder[], options: ListingOptions = {}) {
  const orders = [...initial];
  const pageSize = options.pageSize ?? 100;
  const served: { page: number; ids: string[] }[] = [];
  let waiters: (() => void)[] = [];
  const listAsked = () => {
    for (const resolve of waiters) resolve();
    waiters = [];
  };
  const held = new Set<ServerResponse>();
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://stand-in');
    const json = (status: number, body: unknown) =>
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (url.pathname === '/client/orders') {
      listAsked();
      if (options.silentList) {
        held.add(response);
        return;
      }
      const page = Number(url.searchParams.get('offset') ?? '1');
      const inWindow = listedBetween(orders, url.searchParams.get('from'), url.searchParams.get('to'));
      const data = inWindow.slice((page - 1) * pageSize, page * pageSize);
      const totalPages = Math.max(1, Math.ceil(inWindow.length / pageSize));
      served.push({ page, ids: data.map((order) => order.id) });
      json(200, { data, pagination: { page, limit: pageSize, total: inWindow.length, totalPages } });
      if (page === 1 && options.arrivals) orders.push(...options.arrivals.splice(0));
      return;
    }
    const match = /^\/client\/orders\/([^/]+)$/.exec(url.pathname);
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
    /** Each list page answered: its number and the ids on it. */
    served,
    /** Resolves when the next GET /client/orders arrives (call it before causing the request). */
    nextListRequest: () => new Promise<void>((resolve) => waiters.push(resolve)),
    close: () => {
      for (const response of held) response.destroy();
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Newest first, within [from, to] when given, as the reference describes GET /client/orders. */
function listedBetween(orders: readonly ListedOrder[], from: string | null, to: string | null) {
  const after = from === null ? -Infinity : Date.parse(from);
  const before = to === null ? Infinity : Date.parse(to);
  return orders
    .filter((order) => {
      const at = Date.parse(order.timestamp);
      return at >= after && at <= before;
    })
    .sort((a, b) => Date.parse(b.timestamp) - Date.parse(a.timestamp));
}
