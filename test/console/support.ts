/**
 * A console on a real listener (port 0) over a test database and the real sandbox (port 0, for adopting
 * orders; one sandbox account per account of the console, each with its own token), people of every role
 * (seeing every account), and a small client that keeps cookies the way a browser does and reads the CSRF
 * token out of the pages it is served.
 */
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { createPurchaseClient, type PurchaseClient } from '../../src/api/index.js';
import { hashPassword } from '../../src/console/passwords.js';
import { registerConsole } from '../../src/console/server.js';
import { type ConsoleStore, openConsoleStore, ROLES, type Role } from '../../src/db/index.js';
import { createReceiverServer, listen } from '../../src/observability/http-server.js';
import { createLogger } from '../../src/observability/logger.js';
import { createMetrics, type Metrics } from '../../src/observability/metrics.js';
import { demoTokenOf, type RunningSandbox, startSandbox } from '../../src/sandbox/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

export const PASSWORD = 'correct horse battery staple';
/**
 * The people of these tests get a cheap scrypt cost: verification reads the cost from the stored hash, so the
 * code path is the same, and a loaded machine does not spend seconds on each of the suite's many logins.
 */
export const TEST_COST = { N: 2 ** 10, r: 8, p: 1 };

/** A logger at info whose lines go to `lines`, so a test can read what the console logged. */
export function capturingLogger(lines: string[]) {
  return createLogger({
    level: 'info',
    destination: new Writable({
      write: (chunk, _e, done) => {
        lines.push(String(chunk));
        done();
      },
    }),
  });
}

export interface RunningConsole {
  test: TestDatabase;
  store: ConsoleStore;
  url: string;
  server: FastifyInstance;
  /** The purchase service the console reads, and a client of it for placing orders by hand. */
  sandbox: RunningSandbox;
  /** The first account's client. */
  client: PurchaseClient;
  /** Each account's client, by account name. */
  clients: ReadonlyMap<string, PurchaseClient>;
  /** The clock the console reads; tests move it to expire sessions. */
  now: { value: Date };
  /** The console's log lines (JSON), and its counters. */
  logLines: string[];
  metrics: Metrics;
  close(): Promise<void>;
}

/**
 * `requireTotp`: console.requireTotp. `accounts`: the deployment's accounts (default: the one `default` of a
 * deployment without `accounts:`).
 */
export async function startTestConsole(
  options: { requireTotp?: boolean; accounts?: readonly string[] } = {},
): Promise<RunningConsole> {
  const names = options.accounts ?? ['default'];
  const now = { value: new Date() };
  const clock = () => now.value;
  const test = await createTestDatabase(undefined, { clock });
  const store = openConsoleStore(test.database, clock);
  const passwordHash = await hashPassword(PASSWORD, TEST_COST);
  for (const role of ROLES) await store.people.add({ name: role, role, passwordHash }, 'test-setup');
  // Loopback is the trusted proxy: tests tell addresses apart by X-Forwarded-For.
  const server = createReceiverServer(undefined, ['127.0.0.1']);
  const logLines: string[] = [];
  const logger = capturingLogger(logLines);
  const metrics = createMetrics({ defaultMetrics: false });
  const sandbox = await startSandbox({
    stepMs: 0,
    accounts: names.map((name) => ({ name, token: demoTokenOf(name) })),
  });
  const clients = new Map(
    names.map((name) => [
      name,
      createPurchaseClient({ baseUrl: sandbox.url, token: demoTokenOf(name), account: name }),
    ]),
  );
  const client = clients.get(names[0]!)!;
  registerConsole(server, {
    database: test.database,
    store,
    clock,
    logger,
    accounts: new Map([...clients].map(([name, accountClient]) => [name, { name, client: accountClient }])),
    metrics,
    reports: { timeZone: 'UTC' },
    requireTotp: options.requireTotp,
  });
  const port = await listen(server, '127.0.0.1', 0);
  return {
    test,
    store,
    url: `http://127.0.0.1:${port}`,
    server,
    sandbox,
    client,
    clients,
    now,
    logLines,
    metrics,
    async close() {
      await server.close();
      await Promise.all([...clients.values()].map((accountClient) => accountClient.close()));
      await sandbox.close();
      await test.drop();
    },
  };
}

export interface Answer {
  status: number;
  location: string | null;
  body: string;
  headers: Headers;
}

/** One person's browser, without the browser: cookies kept, redirects reported rather than followed. */
export class ConsoleClient {
  private readonly cookies = new Map<string, string>();
  constructor(
    private readonly baseUrl: string,
    /** Sent with every request (a proxy's X-Forwarded-For). */
    private readonly extraHeaders: Record<string, string> = {},
  ) {}

  cookie(name: string): string | undefined {
    return this.cookies.get(name);
  }

  async request(method: 'GET' | 'POST', path: string, form?: Record<string, string>): Promise<Answer> {
    const headers: Record<string, string> = { ...this.extraHeaders };
    if (this.cookies.size > 0) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    if (form) headers['content-type'] = 'application/x-www-form-urlencoded';
    const response = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers,
      body: form ? new URLSearchParams(form).toString() : undefined,
      redirect: 'manual',
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const [name, ...value] = (pair ?? '').split('=');
      if (!name) continue;
      if (value.join('=') === '' || /expires=Thu, 01 Jan 1970/i.test(line)) this.cookies.delete(name.trim());
      else this.cookies.set(name.trim(), value.join('='));
    }
    return {
      status: response.status,
      location: response.headers.get('location'),
      body: await response.text(),
      headers: response.headers,
    };
  }

  get = (path: string) => this.request('GET', path);
  post = (path: string, form: Record<string, string>) => this.request('POST', path, form);

  /** The CSRF token of a page this client is served (the session's, or the login form's). */
  async csrfFrom(path: string): Promise<string> {
    const { body } = await this.get(path);
    const match = /name="_csrf" value="([^"]+)"/.exec(body);
    if (!match?.[1]) throw new Error(`no CSRF token on ${path}`);
    return match[1];
  }

  async login(name: string, password = PASSWORD): Promise<Answer> {
    const token = await this.csrfFrom('/login');
    return this.post('/login', { _csrf: token, name, password });
  }
}

export async function loggedIn(console: RunningConsole, role: Role | string): Promise<ConsoleClient> {
  const client = new ConsoleClient(console.url);
  const answer = await client.login(role);
  if (answer.status !== 303) throw new Error(`login of ${role} answered ${answer.status}`);
  return client;
}
