import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { unpack } from 'msgpackr';

export interface Received {
  contentType: string;
  body: { event: string; data: Record<string, unknown> };
}

/**
 * A webhook endpoint on port 0 that records every POST and answers with the next status of a script
 * (then 200), so tests can await deliveries instead of sleeping.
 */
export async function startReceiver(statuses: number[] = []) {
  const received: Received[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const bytes = Buffer.concat(chunks);
      const contentType = String(request.headers['content-type']);
      const body = contentType.startsWith('application/msgpack')
        ? unpack(bytes)
        : JSON.parse(bytes.toString());
      received.push({ contentType, body });
      response.statusCode = statuses.shift() ?? 200;
      response.end();
      for (const waiter of waiters.filter((w) => received.length >= w.count)) waiter.resolve();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    /** Resolves once at least `count` requests have arrived. */
    waitFor: (count: number) =>
      received.length >= count
        ? Promise.resolve()
        : new Promise<void>((resolve) => waiters.push({ count, resolve })),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
