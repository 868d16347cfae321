/**
 * A bare HTTP server whose handler the test writes, for network behaviour the sandbox does not fake
 * (a body cut off mid-way, a stalled body) and for counting what reached the wire.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { onTestFinished } from 'vitest';
import { createPurchaseClient, type PurchaseClient, type WireFormat } from '../../../src/api/index.js';

export const MEDIA_TYPE: Record<WireFormat, string> = {
  json: 'application/json',
  msgpack: 'application/msgpack',
};

export interface RawRequest {
  method: string;
  url: string;
  authorization: string | undefined;
  accept: string | undefined;
  contentType: string | undefined;
  userAgent: string | undefined;
  body: Buffer;
  /** When the request arrived (Date.now()). */
  at: number;
}

export interface RawServer {
  url: string;
  requests: RawRequest[];
  close(): Promise<void>;
}

export async function startRawServer(
  handle: (request: IncomingMessage, response: ServerResponse, index: number) => void,
): Promise<RawServer> {
  const requests: RawServer['requests'] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    const at = Date.now();
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      requests.push({
        method: request.method ?? '',
        url: request.url ?? '',
        authorization: request.headers.authorization,
        accept: request.headers.accept,
        contentType: request.headers['content-type'],
        userAgent: request.headers['user-agent'],
        body: Buffer.concat(chunks),
        at,
      });
      handle(request, response, requests.length);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A client of `format` (one attempt a call) against a raw server that answers every request 200 with `body`
 * in that format's media type; the test that asks for it closes both when it ends.
 */
export async function clientAnsweredWith(
  format: WireFormat,
  body: Buffer | string,
  token: string,
): Promise<PurchaseClient> {
  const raw = await startRawServer((_request, response) => {
    response.writeHead(200, { 'content-type': MEDIA_TYPE[format] }).end(body);
  });
  onTestFinished(() => raw.close());
  const client = createPurchaseClient({ baseUrl: raw.url, token, format, retry: { maxAttempts: 1 } });
  onTestFinished(() => client.close());
  return client;
}

/** Sends the status line, headers and part of a JSON body, then destroys the connection. */
export function resetMidBody(response: ServerResponse): void {
  response.writeHead(200, { 'content-type': 'application/json', 'content-length': '200' });
  response.write('{"symbol":"USDTBRL","pri');
  setImmediate(() => response.socket?.destroy());
}

/** Sends headers and part of a body, then goes silent (the test's body timeout must fire). */
export function stallMidBody(response: ServerResponse): void {
  response.writeHead(200, { 'content-type': 'application/json', 'content-length': '200' });
  response.write('{"symbol":');
}

/** A port with nothing listening: open a server, note its port, close it. */
export async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
