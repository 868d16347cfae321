import { type SQL, sql } from 'drizzle-orm';

/**
 * An UPDATE whose SET list depends on which fields the caller passes can still be prepared once per
 * combination of fields ("shape"). Values become placeholders named after their column; a null becomes a
 * literal NULL in the statement, because a null bound through a column encoder would turn into JSON
 * `null` in a jsonb column rather than SQL NULL.
 */
export interface Shaped {
  key: string;
  set: Record<string, SQL | ReturnType<typeof sql.placeholder>>;
  values: Record<string, unknown>;
}

export function shapeOf(columns: Record<string, unknown>): Shaped {
  const names = Object.keys(columns)
    .filter((name) => columns[name] !== undefined)
    .sort();
  const set: Shaped['set'] = {};
  const values: Record<string, unknown> = {};
  const key: string[] = [];
  for (const name of names) {
    const value = columns[name];
    if (value === null) {
      set[name] = sql`null`;
      key.push(`${name}=null`);
    } else {
      set[name] = sql.placeholder(name);
      values[name] = value;
      key.push(name);
    }
  }
  return { key: key.join(','), set, values };
}

/** Keeps one prepared statement per shape; the number of shapes is bounded by the engine's call sites. */
export function cacheByShape<P>(prepare: (shape: Shaped, name: string) => P, prefix: string) {
  const cache = new Map<string, P>();
  return (shape: Shaped): P => {
    let prepared = cache.get(shape.key);
    if (!prepared) {
      prepared = prepare(shape, `${prefix}_${cache.size}`);
      cache.set(shape.key, prepared);
    }
    return prepared;
  };
}
