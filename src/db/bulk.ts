/**
 * Statements over thousands of rows whose text stays the same size whatever their number: each list goes as
 * ONE array parameter (`unnest(…)`, `= any(…)`). drizzle's values() and inArray() give every value a
 * parameter of its own, and building those statements for a first start with 10,000 strategies allocated
 * about 180 MB, the most of that start's garbage.
 */
import { getTableColumns, type SQL, sql } from 'drizzle-orm';
import type { PgTable } from 'drizzle-orm/pg-core';
import type { DrizzleExecutor } from './connection.js';

/**
 * Rows written per statement when a first start records thousands of strategies and their versions. Not a
 * parameter limit (the rows go as one array per column) but the start's peak: one statement of 1,000 rows
 * allocates garbage (about 18 MB for 1,000 versions) that outlives a young collection and grows the old
 * generation, which V8 keeps. Memory bench, 10,000 strategies, sampled after one collection (which later
 * proved to count emptied pages too, bench/README.md "Memory"): loaded RSS 191-200 MB at 100 rows against
 * 204-223 MB at 1,000; all 10,000 in one statement gave 289 MB.
 */
const ROWS_PER_STATEMENT = 100;

/** The list in slices of ROWS_PER_STATEMENT, written by the caller in one transaction. */
export function rowSlices<T>(list: readonly T[]): T[][] {
  return Array.from({ length: Math.ceil(list.length / ROWS_PER_STATEMENT) }, (_, index) =>
    list.slice(index * ROWS_PER_STATEMENT, (index + 1) * ROWS_PER_STATEMENT),
  );
}

/**
 * A list as one parameter of SQL type `type[]`. Sent as text[] and cast in SQL: postgres.js types an array
 * by its first element (an array of booleans would go as one boolean), while the text of each value reaches
 * PostgreSQL alike from both drivers.
 */
export function arrayParam(values: readonly unknown[], type: string): SQL {
  const texts = values.map((value) => (value === null || typeof value === 'string' ? value : String(value)));
  return sql`${sql.param(texts)}::text[]${sql.raw(type === 'text' ? '' : `::${type}[]`)}`;
}

/**
 * arrayParam's prepared form: a placeholder given the list at each execution (the caller passes each value
 * as text, null as null), cast the same way. For the statements a burst sends in batches (group-commit.ts).
 */
export function arrayPlaceholder(name: string, type: string): SQL {
  return sql`${sql.placeholder(name)}::text[]${sql.raw(type === 'text' ? '' : `::${type}[]`)}`;
}

/**
 * `insert into table select * from unnest(one array per column)`: rows of any number in one statement. Every
 * column gets a value (a missing one is null, not the column's default), each through the column's own
 * encoder, so the rows stored are those `values(rows)` would store; for tables without generated columns.
 * Returns the insert builder: conflict handling chains on as on any insert.
 */
export function insertRows<Table extends PgTable>(
  executor: DrizzleExecutor,
  table: Table,
  rows: readonly Table['$inferInsert'][],
) {
  const columns = Object.entries(getTableColumns(table));
  const arrays = columns.map(([key, column]) =>
    arrayParam(
      rows.map((row) => {
        const value = (row as Record<string, unknown>)[key];
        return value === undefined || value === null ? null : column.mapToDriverValue(value);
      }),
      column.getSQLType(),
    ),
  );
  return executor.insert(table).select(sql`select * from unnest(${sql.join(arrays, sql`, `)})`);
}
