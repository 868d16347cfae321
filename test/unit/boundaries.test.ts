import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The module boundaries of DESIGN.md, checked on the import statements of src/. They are what keeps
 * drizzle rows inside src/db (the rest of the code sees domain records only) and the decision rules pure;
 * a stray import is the first step across them, so it fails here rather than in review.
 */

const SRC = resolve(import.meta.dirname, '..', '..', 'src');

interface Import {
  /** The importing file, relative to src/ (e.g. `engine/cycle.ts`). */
  from: string;
  /** A relative import resolved to a path relative to src/ (`db/schema.ts`), or a package name. */
  target: string;
}

function sourceFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

const IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)'([^']+)'/gm;

function importsOf(file: string): Import[] {
  const from = relative(SRC, file);
  return [...readFileSync(file, 'utf8').matchAll(IMPORT)].map(([, specifier]) => ({
    from,
    target: specifier!.startsWith('.')
      ? relative(SRC, resolve(dirname(file), specifier!)).replace(/\.js$/, '.ts')
      : specifier!,
  }));
}

const imports = sourceFiles(SRC).flatMap(importsOf);
const moduleOf = (path: string) => (path.includes('/') ? path.slice(0, path.indexOf('/')) : path);
const describeImport = ({ from, target }: Import) => `${from} imports ${target}`;

function violations(rule: (entry: Import) => boolean): string[] {
  return imports.filter(rule).map(describeImport);
}

describe('module boundaries of src/', () => {
  it('finds the imports it checks', () => {
    // Guards the checks below against passing vacuously if the pattern stopped matching.
    expect(
      imports.some((entry) => entry.from === 'engine/cycle-inputs.ts' && entry.target === 'db/index.ts'),
    ).toBe(true);
    expect(imports.some((entry) => entry.from === 'db/connection.ts' && entry.target === 'postgres')).toBe(
      true,
    );
  });

  it('reaches src/db only through db/index.ts, so schema rows and repositories stay inside', () => {
    expect(
      violations(
        ({ from, target }) =>
          moduleOf(from) !== 'db' && moduleOf(target) === 'db' && target !== 'db/index.ts',
      ),
    ).toEqual([]);
  });

  it('keeps the database drivers and drizzle inside src/db', () => {
    const driver = /^(drizzle-orm|postgres$|@electric-sql\/pglite)/;
    expect(violations(({ from, target }) => moduleOf(from) !== 'db' && driver.test(target))).toEqual([]);
  });

  it('does not export the schema from db/index.ts', () => {
    expect(violations(({ from, target }) => from === 'db/index.ts' && /schema|-rows/.test(target))).toEqual(
      [],
    );
  });

  it('keeps the decision rules pure: strategy/ imports no other layer, and only the loader reads files', () => {
    const layers = new Set([
      'db',
      'api',
      'engine',
      'sandbox',
      'tracking',
      'observability',
      'config',
      'cli',
      'runtime',
      'backtest',
      'rest-api',
    ]);
    expect(
      violations(({ from, target }) => moduleOf(from) === 'strategy' && layers.has(moduleOf(target))),
    ).toEqual([]);
    const io = /^node:(fs|net|http|https|child_process|dgram|worker_threads)/;
    expect(
      violations(
        ({ from, target }) =>
          moduleOf(from) === 'strategy' && from !== 'strategy/loader.ts' && io.test(target),
      ),
    ).toEqual([]);
  });

  it('keeps runtime/ (the periodic task, the backoff) free of every other module, so any layer may use it', () => {
    expect(
      imports.some(
        (entry) => entry.from === 'tracking/tracker.ts' && entry.target === 'runtime/periodic-task.ts',
      ),
    ).toBe(true);
    expect(
      violations(({ from, target }) => moduleOf(from) === 'runtime' && !target.startsWith('node:')),
    ).toEqual([]);
  });

  it('keeps backtest/ on the pure rules: strategy/ and money.ts, no other layer, only the series reader reads files', () => {
    const allowed = new Set(['strategy', 'backtest', 'money.ts']);
    const local = ({ target }: Import) => !target.startsWith('node:') && target.endsWith('.ts');
    expect(
      violations(
        (entry) =>
          moduleOf(entry.from) === 'backtest' && local(entry) && !allowed.has(moduleOf(entry.target)),
      ),
    ).toEqual([]);
    const io = /^node:(fs|net|http|https|child_process|dgram|worker_threads)/;
    expect(
      violations(
        ({ from, target }) =>
          moduleOf(from) === 'backtest' && from !== 'backtest/price-series.ts' && io.test(target),
      ),
    ).toEqual([]);
    // Guards the check against passing vacuously.
    expect(
      imports.some((entry) => entry.from === 'backtest/simulate.ts' && entry.target === 'strategy/index.ts'),
    ).toBe(true);
  });

  it('keeps control/ (what people do, shared by the CLI and the console) on the database, money and the pure strategy rules only', () => {
    // strategy/ is pure (no network, database or clock): a target's standing is computed as the worker does.
    const allowed = new Set(['control', 'db', 'strategy', 'money.ts', 'errors.ts']);
    const local = ({ target }: Import) => !target.startsWith('node:') && target.endsWith('.ts');
    expect(
      violations(
        (entry) => moduleOf(entry.from) === 'control' && local(entry) && !allowed.has(moduleOf(entry.target)),
      ),
    ).toEqual([]);
    expect(
      imports.some((entry) => entry.from === 'control/approvals.ts' && entry.target === 'db/index.ts'),
    ).toBe(true);
  });

  it('keeps the REST API a door: only the composition root and the CLI open it, and of the console it takes the permissions table and the page policy', () => {
    expect(
      imports.some(
        (entry) => entry.from === 'rest-api/act-operations.ts' && entry.target === 'control/index.ts',
      ),
    ).toBe(true);
    expect(
      violations(
        ({ from, target }) =>
          moduleOf(target) === 'rest-api' &&
          moduleOf(from) !== 'rest-api' &&
          from !== 'app.ts' &&
          moduleOf(from) !== 'cli',
      ),
    ).toEqual([]);
    expect(
      violations(
        ({ from, target }) =>
          moduleOf(from) === 'rest-api' &&
          moduleOf(target) === 'console' &&
          target !== 'console/permissions.ts' &&
          target !== 'console/server.ts',
      ),
    ).toEqual([]);
  });

  it('keeps the sandbox off the client: of api/ it takes only the protocol names in api/types.ts', () => {
    expect(
      imports.some((entry) => entry.from === 'sandbox/types.ts' && entry.target === 'api/types.ts'),
    ).toBe(true);
    expect(
      violations(
        ({ from, target }) =>
          moduleOf(from) === 'sandbox' && moduleOf(target) === 'api' && target !== 'api/types.ts',
      ),
    ).toEqual([]);
  });

  it('keeps api/ free of db and engine, db/ free of engine, and the worker off the sandbox', () => {
    const forbidden: Record<string, readonly string[]> = {
      api: ['db', 'engine', 'sandbox'],
      db: ['engine', 'api', 'sandbox'],
      engine: ['sandbox'],
      tracking: ['sandbox'],
    };
    expect(
      violations(({ from, target }) => forbidden[moduleOf(from)]?.includes(moduleOf(target)) ?? false),
    ).toEqual([]);
  });
});
