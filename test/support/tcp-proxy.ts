/**
 * A loopback TCP proxy in front of a server (the test database), so a test can cut the connection the way
 * a network partition or a restarted database would: cut() destroys every open connection and refuses new
 * ones until restore().
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { connect, createServer, type Socket } from 'node:net';

export interface TcpProxy {
  port: number;
  /** The connection string with host and port replaced by the proxy's. */
  rewrite(url: string): string;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let refusing = false;
  const server = createServer((client) => {
    if (refusing) {
      client.destroy();
      return;
    }
    const upstream = connect(target.port, target.host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const cutAll = () => {
    for (const socket of sockets) socket.destroy();
    sockets.clear();
  };
  return {
    port,
    rewrite(url) {
      const parsed = new URL(url);
      parsed.hostname = '127.0.0.1';
      parsed.port = String(port);
      return parsed.toString();
    },
    cut() {
      refusing = true;
      cutAll();
    },
    restore() {
      refusing = false;
    },
    async close() {
      refusing = true;
      cutAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
