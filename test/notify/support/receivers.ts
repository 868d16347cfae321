/**
 * Real receivers on port 0 for the notification channels: an HTTP endpoint whose answer the test decides
 * per request (Slack-shaped or a signed-webhook verifier), and an SMTP server that keeps what it receives.
 */
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

export interface ReceivedRequest {
  headers: IncomingHttpHeaders;
  body: string;
  status: number;
}

export interface HttpReceiver {
  url: string;
  port: number;
  requests: ReceivedRequest[];
  /** Resolves when `count` requests have been answered with a 2xx. */
  waitForAccepted(count: number): Promise<void>;
  close(): Promise<void>;
}

/** `answer` decides the status of each request (it may also hang by never resolving). */
export async function startHttpReceiver(
  answer: (request: { headers: IncomingHttpHeaders; body: string }) => number | Promise<number>,
  port = 0,
): Promise<HttpReceiver> {
  const requests: ReceivedRequest[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  const accepted = () => requests.filter((request) => request.status < 300).length;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const status = await answer({ headers: req.headers, body });
      requests.push({ headers: req.headers, body, status });
      res.writeHead(status, { 'content-type': 'text/plain' }).end(status < 300 ? 'ok' : 'no');
      for (const waiter of [...waiters])
        if (accepted() >= waiter.count) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve();
        }
    });
  });
  server.listen(port, '127.0.0.1');
  await once(server, 'listening');
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${bound}/hook`,
    port: bound,
    requests,
    waitForAccepted(count) {
      if (accepted() >= count) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ count, resolve }));
    },
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

export interface ReceivedMail {
  from: string | undefined;
  to: string[];
  raw: string;
}

export interface SmtpReceiver {
  url: string;
  mails: ReceivedMail[];
  close(): Promise<void>;
}

/** An SMTP server without TLS or authentication, answering `rejectWith` (e.g. 550) when set. */
export async function startSmtpReceiver(options: { rejectWith?: number } = {}): Promise<SmtpReceiver> {
  const mails: ReceivedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        if (options.rejectWith !== undefined) {
          callback(Object.assign(new Error('mailbox unavailable'), { responseCode: options.rejectWith }));
          return;
        }
        const envelopeFrom = session.envelope.mailFrom;
        mails.push({
          from: envelopeFrom ? envelopeFrom.address : undefined,
          to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
          raw: Buffer.concat(chunks).toString('utf8'),
        });
        callback();
      });
    },
  });
  server.listen(0, '127.0.0.1');
  await once(server.server, 'listening');
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    mails,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
