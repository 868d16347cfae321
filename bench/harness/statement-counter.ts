/**
 * A loopback TCP proxy in front of PostgreSQL that logs the SQL statements passing through it: their kind
 * (first keyword: insert, update, select, begin, ...), when they left, and whether another statement was
 * still awaiting its answer at that moment (the driver pipelined them, e.g. reads in a Promise.all). The
 * floor of the cycle bench replays "the same number of SQL statements" with that shape; counting on the
 * wire needs no hook in the worker's database layer and sees exactly what the driver sends.
 *
 * Protocol v3 only. From the client: Query ('Q') and Execute ('E') are statements, Parse ('P') and Bind
 * ('B') tell which text an Execute runs, Sync ('S') closes a batch. From the server: ReadyForQuery ('Z')
 * answers one batch (or the startup).
 *
 * It also counts exchanges: the client's messages that ask for an answer (Query, Sync, and Flush, which a
 * driver sends to learn a statement's parameter types before binding it). A statement answered in one
 * exchange costs one; a statement sent unprepared with parameters costs two (postgres.js describes it
 * first).
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

/** One statement as it left for the server; `at` is performance.now() of this process. */
export interface StatementSeen {
  at: number;
  kind: string;
  /** Another statement (on any connection) was still unanswered when this one left. */
  overlapped: boolean;
}

export interface StatementCounter {
  /** postgres:// URL that goes through the proxy to the same database. */
  url: string;
  /** Statements since the last reset, in order. */
  log(): readonly StatementSeen[];
  /** Exchanges since the last reset: messages after which the client waits for the server. */
  exchanges(): number;
  reset(): void;
  close(): Promise<void>;
}

const SSL_REQUEST = 80_877_103;

export async function startStatementCounter(targetUrl: string): Promise<StatementCounter> {
  const target = new URL(targetUrl);
  let seen: StatementSeen[] = [];
  let exchanges = 0;
  let inFlight = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    const session = new Session({
      onStatement(kind) {
        seen.push({ at: performance.now(), kind, overlapped: inFlight > 0 });
        inFlight++;
      },
      onAnswered(count) {
        inFlight -= count;
      },
      onExchange() {
        exchanges++;
      },
    });
    client.on('data', (chunk: Buffer) => session.fromClient(chunk));
    upstream.on('data', (chunk: Buffer) => session.fromServer(chunk));
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('close', () => session.abandon());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('statement counter did not bind');
  const proxied = new URL(targetUrl);
  proxied.hostname = '127.0.0.1';
  proxied.port = String(address.port);
  return {
    url: proxied.toString(),
    log: () => seen,
    exchanges: () => exchanges,
    reset: () => {
      seen = [];
      exchanges = 0;
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

interface SessionEvents {
  onStatement(kind: string): void;
  /** `count` statements got their answer. */
  onAnswered(count: number): void;
  onExchange(): void;
}

/** One proxied connection: both directions split into messages. */
class Session {
  private readonly client = new MessageSplitter(true);
  private readonly server = new MessageSplitter(false);
  private readonly prepared = new Map<string, string>();
  private readonly portals = new Map<string, string>();
  /** Statements of the batch not yet closed by a Sync, and of each batch awaiting its ReadyForQuery. */
  private open = 0;
  private readonly awaiting: number[] = [];
  private opaque = false;

  constructor(private readonly events: SessionEvents) {}

  fromClient(chunk: Buffer): void {
    if (this.opaque) return;
    this.client.feed(chunk, (type, body) => {
      if (type === 'ssl') {
        // The server may agree to TLS, which this proxy cannot read: stop counting rather than guess.
        this.opaque = true;
      } else if (type === 'Q') {
        this.statement(kindOf(readCString(body, 0).text));
        this.awaiting.push(this.open);
        this.open = 0;
        this.events.onExchange();
      } else if (type === 'P') {
        const name = readCString(body, 0);
        this.prepared.set(name.text, kindOf(readCString(body, name.next).text));
      } else if (type === 'B') {
        const portal = readCString(body, 0);
        this.portals.set(portal.text, this.prepared.get(readCString(body, portal.next).text) ?? 'unknown');
      } else if (type === 'E') {
        this.statement(this.portals.get(readCString(body, 0).text) ?? 'unknown');
      } else if (type === 'S') {
        this.awaiting.push(this.open);
        this.open = 0;
        this.events.onExchange();
      } else if (type === 'H') {
        this.events.onExchange();
      }
    });
  }

  fromServer(chunk: Buffer): void {
    if (this.opaque) return;
    this.server.feed(chunk, (type) => {
      // The first ReadyForQuery ends the startup and answers no batch: the queue is empty then.
      if (type === 'Z' && this.awaiting.length > 0) this.events.onAnswered(this.awaiting.shift()!);
    });
  }

  /** A connection closed mid-batch (terminated, killed): its statements will never be answered. */
  abandon(): void {
    this.events.onAnswered(this.open + this.awaiting.reduce((sum, n) => sum + n, 0));
    this.open = 0;
    this.awaiting.length = 0;
  }

  private statement(kind: string): void {
    this.open++;
    this.events.onStatement(kind);
  }
}

/** Splits a byte stream into protocol messages; the client's first message has no type byte. */
class MessageSplitter {
  private buffer: Buffer = Buffer.alloc(0);

  constructor(private startup: boolean) {}

  feed(chunk: Buffer, onMessage: (type: string, body: Buffer) => void): void {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    for (;;) {
      if (this.startup) {
        if (this.buffer.length < 8) return;
        const length = this.buffer.readInt32BE(0);
        if (this.buffer.length < length) return;
        if (this.buffer.readInt32BE(4) === SSL_REQUEST) onMessage('ssl', this.buffer.subarray(8, length));
        else this.startup = false;
        this.buffer = this.buffer.subarray(length);
        continue;
      }
      if (this.buffer.length < 5) return;
      const length = this.buffer.readInt32BE(1);
      if (this.buffer.length < length + 1) return;
      onMessage(String.fromCharCode(this.buffer[0]!), this.buffer.subarray(5, length + 1));
      this.buffer = this.buffer.subarray(length + 1);
    }
  }
}

function readCString(buffer: Buffer, start: number): { text: string; next: number } {
  const end = buffer.indexOf(0, start);
  const stop = end === -1 ? buffer.length : end;
  return { text: buffer.toString('utf8', start, stop), next: stop + 1 };
}

function kindOf(sql: string): string {
  const match = /^\s*(?:\/\*.*?\*\/\s*)*([a-z]+)/i.exec(sql);
  return match ? match[1]!.toLowerCase() : 'unknown';
}
