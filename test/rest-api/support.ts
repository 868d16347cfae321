/**
 * The REST API as `treasury-bot run` serves it: a real App (worker, console and API on the ops listener, port
 * 0) over a test database and the real sandbox, with strategy files of the test's own, people of every role
 * and a token of each role named after its person (an approval through a token is that person's). Every
 * answer a test reads is checked against the OpenAPI document the API serves, with ajv, and counted by its
 * operation, so that a test file can prove it called every documented operation.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { App } from '../../src/app.js';
import { hashPassword } from '../../src/console/passwords.js';
import { type ConsoleStore, type Database, openConsoleStore, ROLES, type Role } from '../../src/db/index.js';
import { newApiToken } from '../../src/rest-api/tokens.js';
import { DEMO_TOKEN, type RunningSandbox, startSandbox } from '../../src/sandbox/index.js';
import { TEST_COST } from '../console/support.js';
import { createTestDatabase, type TestBackend } from '../support/database.js';

export interface ApiAnswer {
  status: number;
  headers: Headers;
  /** The parsed JSON body (null when the body was empty); checked against the document before a test reads it. */
  // biome-ignore lint/suspicious/noExplicitAny: a decoded answer; each test asserts the fields it reads.
  body: any;
}

export interface CallOptions {
  token?: string | null;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface RunningApi {
  app: App;
  sandbox: RunningSandbox;
  database: Database;
  store: ConsoleStore;
  base: string;
  /** A token of each role, held by the person of that role's name. */
  tokens: Record<Role, string>;
  /** Every token added so far. */
  issued: string[];
  /** Every line the worker logged. */
  logText(): string;
  /** One request; its answer is checked against the document and counted under its operation. */
  call(method: 'GET' | 'POST', path: string, options?: CallOptions): Promise<ApiAnswer>;
  /** Adds a token (the way `token add` does) and returns it. */
  addToken(
    name: string,
    role: Role,
    options?: { accounts?: string[] | null; expiresAt?: Date | null },
  ): Promise<string>;
  /** The operationIds the document lists and the ones called so far. */
  coverage(): { documented: string[]; called: string[] };
  close(): Promise<void>;
}

export const PASSWORD = 'a password of the API tests';

/** Each account's token at the sandbox, which every account of these tests shares. */
export const accountToken = (account: string) => `${DEMO_TOKEN}-${account}`;

/**
 * The worker with `accounts` at one sandbox (each its own token, ledger and credit line), the strategy files
 * and `settings` (the YAML of the settings file beyond the log level and the accounts). On PGlite the worker
 * opens an embedded database of its own, as `npm start` does.
 */
export async function startApi(
  backend: TestBackend,
  options: { accounts: readonly string[]; strategies: string; settings?: string },
): Promise<RunningApi> {
  const sandbox = await startSandbox({
    stepMs: 0,
    accounts: options.accounts.map((name) => ({ name, token: accountToken(name) })),
  });
  const test = backend === 'postgres' ? await createTestDatabase('postgres') : undefined;
  const folder = await mkdtemp(join(tmpdir(), 'tb-api-'));
  const accounts = options.accounts
    .map(
      (name) =>
        `  - name: ${name}\n    api:\n      url: ${sandbox.url}\n      token: ${accountToken(name)}\n`,
    )
    .join('');
  await writeFile(
    join(folder, 'settings.yaml'),
    `log:\n  level: info\naccounts:\n${accounts}${options.settings ?? ''}`,
  );
  await writeFile(join(folder, 'strategies.yaml'), options.strategies);
  const lines: string[] = [];
  const app = new App({
    mode: 'run',
    env: {
      ...(test?.url ? { DATABASE_URL: test.url } : { TREASURY_DATA_DIR: join(folder, 'data') }),
      TREASURY_CONFIG: join(folder, 'settings.yaml'),
      TREASURY_STRATEGIES: join(folder, 'strategies.yaml'),
      TREASURY_OPS_ADDR: '127.0.0.1:0',
    },
    logDestination: new Writable({
      write: (chunk, _encoding, done) => {
        lines.push(String(chunk));
        done();
      },
    }),
  });
  await app.start();
  const { database } = app.context;
  const store = openConsoleStore(database);
  const base = `http://127.0.0.1:${app.ports.ops}/api/v1`;
  const passwordHash = await hashPassword(PASSWORD, TEST_COST);
  const issued: string[] = [];
  const addToken: RunningApi['addToken'] = async (name, role, options = {}) => {
    const made = newApiToken();
    await store.apiTokens.add(
      { name, role, accounts: options.accounts ?? null, expiresAt: options.expiresAt ?? null, ...made },
      'test-setup',
    );
    issued.push(made.token);
    return made.token;
  };
  const tokens = {} as Record<Role, string>;
  for (const role of ROLES) {
    await store.people.add({ name: role, role, passwordHash }, 'test-setup');
    tokens[role] = await addToken(role, role);
  }

  const document = (await (await fetch(`${base}/openapi.json`)).json()) as {
    paths: Record<string, Record<string, { operationId: string }>>;
  };
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  ajv.addSchema(document, 'openapi');
  const validators = new Map<string, ValidateFunction>();
  const routes = Object.entries(document.paths).flatMap(([template, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({
      method: method.toUpperCase(),
      template,
      pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`),
      operationId: operation.operationId,
    })),
  );
  const called = new Set<string>();

  const check = (method: string, path: string, answer: ApiAnswer) => {
    const bare = path.split('?')[0] ?? path;
    const route = routes.find((candidate) => candidate.method === method && candidate.pattern.test(bare));
    if (!route) {
      if (answer.status !== 404) throw new Error(`${method} ${path} is no operation of the document`);
      return;
    }
    called.add(route.operationId);
    const type = answer.headers.get('content-type') ?? '';
    const documented = answer.status < 400;
    const media = documented ? 'application/json' : 'application/problem+json';
    if (!type.startsWith(media)) throw new Error(`${method} ${path} answered ${answer.status} as ${type}`);
    const pointer = [
      'paths',
      route.template.replaceAll('~', '~0').replaceAll('/', '~1'),
      method.toLowerCase(),
      'responses',
      documented ? String(answer.status) : 'default',
      'content',
      media.replace('/', '~1'),
      'schema',
    ].join('/');
    let validate = validators.get(pointer);
    if (!validate) {
      validate = ajv.compile({ $ref: `openapi#/${pointer}` });
      validators.set(pointer, validate);
    }
    if (!validate(answer.body)) {
      throw new Error(
        `${method} ${path} (${answer.status}) does not match the document: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(answer.body).slice(0, 2000)}`,
      );
    }
  };

  return {
    app,
    sandbox,
    database,
    store,
    base,
    tokens,
    issued,
    addToken,
    logText: () => lines.join(''),
    async call(method, path, options = {}) {
      const token = options.token === undefined ? tokens.admin : options.token;
      const headers: Record<string, string> = { ...options.headers };
      if (token !== null) headers.authorization = `Bearer ${token}`;
      if (options.body !== undefined) headers['content-type'] = 'application/json';
      const response = await fetch(`${base}${path}`, {
        method,
        headers,
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
      });
      const text = await response.text();
      const answer = {
        status: response.status,
        headers: response.headers,
        body: text ? JSON.parse(text) : null,
      };
      check(method, path, answer);
      return answer;
    },
    coverage: () => ({
      documented: routes.map((route) => route.operationId).sort(),
      called: [...called].sort(),
    }),
    async close() {
      await app.stop();
      await sandbox.close();
      await test?.drop();
    },
  };
}
