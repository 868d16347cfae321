/**
 * A loopback TCP proxy in front of PostgreSQL that logs the SQL statements passing through it: their kind
 * (first keyword: insert, update, select, begin, ...), text and parameters, when they left, whether another
 * statement was still awaiting its answer at that moment (the driver pipelined them, e.g. reads in a
 * Promise.all), and what they answered (command tag, first row). The floor of the cycle bench replays the
 * very same statements with a raw driver; capturing on the wire needs no hook in the worker's database layer
 * and sees exactly what the driver sends.
 *
 * Protocol v3 only. From the client: Query ('Q') and Execute ('E') are statements, Parse ('P') and Bind
 * ('B') tell which text and parameters an Execute runs, Describe ('D') asks a prepared statement's columns,
 * Sync ('S') closes a batch. From the server: RowDescription ('T') names the columns, DataRow ('D') and
 * CommandComplete ('C') answer a statement, ReadyForQuery ('Z') answers one batch (or the startup).
 *
 * It also counts exchanges: the client's messages that ask for an answer (Query, Sync, and Flush, which a
 * driver sends to learn a statement's parameter types before binding it). A statement answered in one
 * exchange costs one; a statement sent unprepared with parameters costs two (postgres.js describes it
 * first).
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

/** A row as text, by column name. */
export type StatementRow = Readonly<Record<string, string | null>>;

/** One statement as it left for the server; `at` is performance.now() of this process. */
export interface StatementSeen {
  at: number;
  kind: string;
  text: string;
  /**
   * Sent as a simple Query, or parsed, bound and executed (the extended protocol) as an unnamed statement
   * (parsed again each time) or a named one (prepared on the connection).
   */
  protocol: 'simple' | 'unnamed' | 'named';
  /** The parameter type OIDs its Parse declared (0: left to the server), and the bound values as text. */
  types: readonly number[];
  parameters: readonly (string | null)[];
  /** Another statement (on any connection) was still unanswered when this one left. */
  overlapped: boolean;
  /** Filled in when answered: the command tag ("INSERT 0 1") and the first row, by column name. */
  answer?: { tag: string; firstRow: StatementRow | null };
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
      onStatement(statement) {
        statement.overlapped = inFlight > 0;
        seen.push(statement);
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
  onStatement(statement: StatementSeen): void;
  /** `count` statements got their answer. */
  onAnswered(count: number): void;
  onExchange(): void;
}

interface Prepared {
  text: string;
  kind: string;
  types: number[];
  columns: string[] | null;
}

/** What the server answers next on this connection, in the order the client asked. */
type Pending =
  | { awaits: 'describe'; statement: string }
  | { awaits: 'statement'; seen: StatementSeen; columns: string[] | null; firstRow: StatementRow | null }
  | { awaits: 'sync' };

/** One proxied connection: both directions split into messages. */
class Session {
  private readonly client = new MessageSplitter(true);
  private readonly server = new MessageSplitter(false);
  private readonly prepared = new Map<string, Prepared>();
  private readonly portals = new Map<string, { statement: string; parameters: (string | null)[] }>();
  /** Statements of the batch not yet closed by a Sync, and of each batch awaiting its ReadyForQuery. */
  private open = 0;
  private readonly awaiting: number[] = [];
  private readonly pending: Pending[] = [];
  private opaque = false;

  constructor(private readonly events: SessionEvents) {}

  fromClient(chunk: Buffer): void {
    if (this.opaque) return;
    this.client.feed(chunk, (type, body) => {
      if (type === 'ssl') {
        // The server may agree to TLS, which this proxy cannot read: stop counting rather than guess.
        this.opaque = true;
      } else if (type === 'Q') {
        const text = readCString(body, 0).text;
        this.statement({ text, kind: kindOf(text), types: [], columns: null }, 'simple', []);
        this.closeBatch();
      } else if (type === 'P') {
        const name = readCString(body, 0);
        const text = readCString(body, name.next);
        const types = Array.from({ length: body.readInt16BE(text.next) }, (_, i) =>
          body.readUInt32BE(text.next + 2 + 4 * i),
        );
        this.prepared.set(name.text, { text: text.text, kind: kindOf(text.text), types, columns: null });
      } else if (type === 'B') {
        const portal = readCString(body, 0);
        const statement = readCString(body, portal.next);
        this.portals.set(portal.text, {
          statement: statement.text,
          parameters: readBoundValues(body, statement.next),
        });
      } else if (type === 'D') {
        const name = readCString(body, 1).text;
        this.pending.push({
          awaits: 'describe',
          statement: body[0] === 0x50 ? (this.portals.get(name)?.statement ?? '') : name,
        });
      } else if (type === 'E') {
        const portal = this.portals.get(readCString(body, 0).text);
        const prepared = portal && this.prepared.get(portal.statement);
        if (prepared)
          this.statement(prepared, portal.statement === '' ? 'unnamed' : 'named', portal.parameters);
        else this.statement({ text: '', kind: 'unknown', types: [], columns: null }, 'unnamed', []);
      } else if (type === 'S') {
        this.closeBatch();
      } else if (type === 'H') {
        this.events.onExchange();
      }
    });
  }

  fromServer(chunk: Buffer): void {
    if (this.opaque) return;
    this.server.feed(chunk, (type, body) => {
      const head = this.pending[0];
      if (type === 'T' || type === 'n') {
        const columns = type === 'T' ? readColumnNames(body) : [];
        if (head?.awaits === 'describe') {
          const prepared = this.prepared.get(head.statement);
          if (prepared) prepared.columns = columns;
          this.pending.shift();
        } else if (head?.awaits === 'statement') {
          head.columns = columns;
        }
      } else if (type === 'D' && head?.awaits === 'statement' && head.firstRow === null) {
        const values = readRowValues(body);
        head.firstRow = Object.fromEntries(
          (head.columns ?? []).map((column, i) => [column, values[i] ?? null]),
        );
      } else if ((type === 'C' || type === 'I') && head?.awaits === 'statement') {
        const tag = type === 'C' ? readCString(body, 0).text : '';
        head.seen.answer = { tag, firstRow: head.firstRow };
        this.pending.shift();
      } else if (type === 'Z') {
        // The first ReadyForQuery ends the startup and answers no batch: the queue is empty then. An error
        // skips the rest of its batch, whose statements stay unanswered.
        const sync = this.pending.findIndex((entry) => entry.awaits === 'sync');
        if (sync !== -1) this.pending.splice(0, sync + 1);
        if (this.awaiting.length > 0) this.events.onAnswered(this.awaiting.shift()!);
      }
    });
  }

  /** A connection closed mid-batch (terminated, killed): its statements will never be answered. */
  abandon(): void {
    this.events.onAnswered(this.open + this.awaiting.reduce((sum, n) => sum + n, 0));
    this.open = 0;
    this.awaiting.length = 0;
    this.pending.length = 0;
  }

  private statement(
    prepared: Prepared,
    protocol: StatementSeen['protocol'],
    parameters: (string | null)[],
  ): void {
    this.open++;
    const seen: StatementSeen = {
      at: performance.now(),
      kind: prepared.kind,
      text: prepared.text,
      protocol,
      types: prepared.types,
      parameters,
      overlapped: false,
    };
    this.pending.push({ awaits: 'statement', seen, columns: prepared.columns, firstRow: null });
    this.events.onStatement(seen);
  }

  private closeBatch(): void {
    this.awaiting.push(this.open);
    this.open = 0;
    this.pending.push({ awaits: 'sync' });
    this.events.onExchange();
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

/** A Bind's parameters from `start` (its format codes); binary ones, which postgres.js sends only for bytea, as base64. */
function readBoundValues(body: Buffer, start: number): (string | null)[] {
  const formats = Array.from({ length: body.readInt16BE(start) }, (_, i) =>
    body.readInt16BE(start + 2 + 2 * i),
  );
  let at = start + 2 + 2 * formats.length;
  const count = body.readInt16BE(at);
  at += 2;
  const values: (string | null)[] = [];
  for (let i = 0; i < count; i++) {
    const length = body.readInt32BE(at);
    at += 4;
    if (length === -1) {
      values.push(null);
      continue;
    }
    const binary = (formats.length === 1 ? formats[0] : formats[i]) === 1;
    values.push(body.toString(binary ? 'base64' : 'utf8', at, at + length));
    at += length;
  }
  return values;
}

function readColumnNames(body: Buffer): string[] {
  const names: string[] = [];
  let at = 2;
  for (let i = body.readInt16BE(0); i > 0; i--) {
    const name = readCString(body, at);
    names.push(name.text);
    // Table OID, column number, type OID, type size, type modifier, format: 18 bytes.
    at = name.next + 18;
  }
  return names;
}

function readRowValues(body: Buffer): (string | null)[] {
  const values: (string | null)[] = [];
  let at = 2;
  for (let i = body.readInt16BE(0); i > 0; i--) {
    const length = body.readInt32BE(at);
    at += 4;
    values.push(length === -1 ? null : body.toString('utf8', at, at + length));
    if (length > 0) at += length;
  }
  return values;
}

function kindOf(sql: string): string {
  const match = /^\s*(?:\/\*.*?\*\/\s*)*([a-z]+)/i.exec(sql);
  return match ? match[1]!.toLowerCase() : 'unknown';
}
