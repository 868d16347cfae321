/**
 * What one operation of the REST API is: its method and path, the permission of src/console/permissions.ts
 * it needs (declared on its route as the console's are), the zod schemas of its path, query and body (they
 * validate the request and, converted, document it) and of its answer, and what it runs. The server walks
 * the table of operations to register routes; openapi.ts walks the same table to write the document.
 */
import { z } from 'zod';
import type { PurchaseClient } from '../api/index.js';
import type { Permission } from '../console/permissions.js';
import type { AccountScope, ApiToken, ConsoleStore, Database } from '../db/index.js';
import type { CycleReport } from '../engine/index.js';
import type { Logger } from '../observability/logger.js';
import { ApiProblem } from './problems.js';

/** What every operation works with. */
export interface RestApiContext {
  database: Database;
  store: ConsoleStore;
  clock: () => Date;
  logger: Pick<Logger, 'error' | 'warn' | 'info'>;
  /**
   * Every account of the deployment, by name, with its purchase service where this process reaches it (for
   * adopting an order): the console's accounts (ConsoleContext.accounts).
   */
  accounts: ReadonlyMap<string, { name: string; client?: PurchaseClient }>;
  /** Host names answered besides loopback's, as the console's (ConsoleContext.hosts). */
  hosts?: readonly string[];
  /** reports.timezone: the zone of dates in queries that name none. */
  timeZone: string;
  /** console.apiRequestsPerMinute: requests one token may make per minute on this replica. */
  requestsPerMinute: number;
  /** One cycle of a strategy now through this process's worker (`run`); absent where none runs (`console`). */
  runOnce?: (strategy: string, slot: Date) => Promise<CycleReport>;
}

/** One request as an operation sees it: validated input, the token, and the accounts it may reach. */
export interface ApiCall<P, Q, B> {
  context: RestApiContext;
  params: P;
  query: Q;
  body: B;
  /** The token of the request: its name is the actor of every act, in the audit log and the domain's rules. */
  token: ApiToken;
  scope: AccountScope;
}

type InputOf<S> = S extends z.ZodType ? z.output<S> : Record<string, never>;

export interface Operation<
  P extends z.ZodType | undefined = z.ZodType | undefined,
  Q extends z.ZodType | undefined = z.ZodType | undefined,
  B extends z.ZodType | undefined = z.ZodType | undefined,
> {
  /** The OpenAPI operationId. */
  id: string;
  method: 'GET' | 'POST';
  /** Below /api/v1, in fastify's form: `/cycles/:id`. */
  path: string;
  summary: string;
  requires: Permission;
  params?: P;
  query?: Q;
  body?: B;
  answer: z.ZodType;
  /** 201 for an operation that makes a new resource; 200 otherwise. */
  status?: 200 | 201;
  run(call: ApiCall<InputOf<P>, InputOf<Q>, InputOf<B>>): Promise<unknown>;
}

/**
 * Types an operation's `run` by its schemas; the table holds them erased (`run` is a method, so its typed
 * parameter is accepted where the erased one is declared, without a cast).
 */
export function defineOperation<
  P extends z.ZodType | undefined = undefined,
  Q extends z.ZodType | undefined = undefined,
  B extends z.ZodType | undefined = undefined,
>(operation: Operation<P, Q, B>): Operation {
  return operation;
}

/** Validates one part of the request; what is wrong is a 400 naming each field. */
export function parseInput<S extends z.ZodType>(
  part: 'path' | 'query' | 'body',
  schema: S,
  value: unknown,
): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const errors = parsed.error.issues.map((issue) => ({
    field: [part, ...issue.path.map(String)].join('.'),
    message: issue.message,
  }));
  throw new ApiProblem(
    'INVALID_ARGUMENT',
    errors.map((error) => `${error.field}: ${error.message}`).join('; '),
    errors,
  );
}

/** A row id in a path: a positive whole number. */
export const idParam = z.string().regex(/^[1-9]\d{0,14}$/, { error: 'expected a positive whole number' });

/** A page size: 1 to `max`, `fallback` when absent. */
export const pageSize = (max: number, fallback: number) =>
  z.coerce.number().int().min(1).max(max).default(fallback);

/**
 * A page's cursor: where the previous page ended, opaque to the client (base64url JSON). Its content is
 * checked by the operation that reads it: a cursor is only ever one this API wrote.
 */
export const cursorParam = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,400}$/, { error: 'expected a cursor of a previous page' });

export function encodeCursor(position: unknown): string {
  return Buffer.from(JSON.stringify(position)).toString('base64url');
}

export function decodeCursor<T>(cursor: string, schema: z.ZodType<T>): T {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    value = undefined;
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new ApiProblem('INVALID_ARGUMENT', 'query.cursor: not a cursor of a previous page', [
      { field: 'query.cursor', message: 'not a cursor of a previous page' },
    ]);
  }
  return parsed.data;
}
