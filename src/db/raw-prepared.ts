/**
 * A statement written as SQL text, prepared on whichever executor runs it. Drizzle's `.prepare()` binds a
 * statement to the session that built it, so a statement that must run inside a transaction would be
 * rebuilt by the query builder on every transaction; text with `$n` parameters costs nothing to bind to
 * the transaction's session, and a name makes the driver prepare it once per connection.
 */
import { type Placeholder, type Query, sql } from 'drizzle-orm';
import type { SelectedFieldsOrdered } from 'drizzle-orm/pg-core';
import type { DrizzleExecutor } from './connection.js';

/** Rows as arrays of driver values, in select-list order (both drivers answer in this mode). */
export type RawRows = unknown[][];

export interface RawStatement<T> {
  execute(executor: DrizzleExecutor, values: Record<string, unknown>): Promise<T>;
}

/** `text` uses `$1..$n` for `params`, in order; `map` turns the rows into the result. */
export function defineRawStatement<T>(
  name: string,
  text: string,
  params: readonly string[],
  map: (rows: RawRows) => T,
): RawStatement<T> {
  const query = { sql: text, params: params.map((param): Placeholder => sql.placeholder(param)) };
  return {
    execute(executor, values) {
      const prepared = executor._.session.prepareQuery<{
        execute: T;
        all: unknown;
        values: unknown;
      }>(query, undefined, name, false, map);
      return prepared.execute(values);
    },
  };
}

interface BuiltInternals {
  fields?: SelectedFieldsOrdered;
  joinsNotNullableMap?: Record<string, boolean>;
}

/**
 * A builder statement (with placeholders) built once on the pool handle and bound to each executor it
 * runs on, transactions included, without running the query builder again. Relies on the driver's
 * prepared query keeping its result fields, as both drizzle drivers do.
 */
export function bindBuiltStatement<T>(
  built: { getQuery(): Query },
  name: string,
): { execute(executor: DrizzleExecutor, values: Record<string, unknown>): Promise<T> } {
  const query = built.getQuery();
  const { fields, joinsNotNullableMap } = built as unknown as BuiltInternals;
  return {
    execute(executor, values) {
      const prepared = executor._.session.prepareQuery<{ execute: T; all: unknown; values: unknown }>(
        query,
        fields,
        name,
        true,
      );
      Object.assign(prepared, { joinsNotNullableMap });
      return prepared.execute(values);
    },
  };
}
