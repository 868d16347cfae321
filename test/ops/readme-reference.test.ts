import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { z } from 'zod';
import { ENV_BINDINGS } from '../../src/config/env.js';
import { settingsSchema } from '../../src/config/schema.js';
import { isDecimal } from '../../src/money.js';
import { KNOWN_KEYS } from '../../src/strategy/strategy-schema.js';
import { workerFamilies } from './support/promql.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const readme = readFileSync(resolve(ROOT, 'README.md'), 'utf8');

/** The rows of the markdown table that follows `heading` (up to the next heading), as trimmed cells. */
function tableAfter(heading: string): string[][] {
  const section = readme.slice(readme.indexOf(heading)).split(/\n## /)[0] ?? '';
  return section
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) =>
      line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim()),
    );
}

const code = (cell: string | undefined) => [...(cell ?? '').matchAll(/`([^`]+)`/g)].map((match) => match[1]!);

/** Dotted keys of the leaves of a zod object schema, looking through defaults and optionals. */
function leafKeys(schema: z.ZodType, prefix = ''): string[] {
  let inner: z.ZodType = schema;
  while (!(inner instanceof z.ZodObject) && 'innerType' in inner.def)
    inner = inner.def.innerType as z.ZodType;
  if (!(inner instanceof z.ZodObject)) return [prefix];
  return Object.entries(inner.shape as Record<string, z.ZodType>).flatMap(([key, value]) =>
    leafKeys(value, prefix ? `${prefix}.${key}` : key),
  );
}

const valueAt = (tree: unknown, key: string) =>
  key.split('.').reduce<unknown>((node, part) => (node as Record<string, unknown> | undefined)?.[part], tree);

/** A default as the README writes it: decimals (parsed to Decimal) in quotes, as the settings file wants them. */
const spelled = (value: unknown) => (isDecimal(value) ? JSON.stringify(value.toFixed()) : String(value));

/** The README is the operators' reference: every setting, strategy key and series, as the code has them. */
describe('README reference', () => {
  it('lists every setting with its variable and its default', () => {
    const rows = new Map(
      tableAfter('## Settings').map(([key, env, value]) => [code(key)[0], { env, value }]),
    );
    // The `*File` forms are read by the loader before validation, so they are not in the schema.
    const fileKeys = ENV_BINDINGS.map((binding) => binding.key).filter((key) => key.endsWith('File'));
    const defaultsYaml = parse(readFileSync(resolve(ROOT, 'config/default.yaml'), 'utf8'));
    const keys = [...leafKeys(settingsSchema), ...fileKeys];
    expect(keys.filter((key) => !rows.has(key))).toEqual([]);
    expect([...rows.keys()].filter((key) => !keys.includes(key ?? ''))).toEqual([]);

    const defaults = settingsSchema.parse({});
    for (const [key, row] of rows) {
      const binding = ENV_BINDINGS.find((candidate) => candidate.key === key);
      expect(code(row.env), key).toEqual(binding ? [binding.name] : []);
      const expected = valueAt(defaults, key ?? '');
      expect(row.value, key).toBe(expected === undefined ? 'unset' : `\`${spelled(expected)}\``);
      // config/default.yaml shows the same default wherever it spells the key out.
      const shown = valueAt(defaultsYaml, key ?? '');
      if (shown !== undefined) expect(String(shown), `config/default.yaml ${key}`).toBe(String(expected));
    }
  });

  it('lists every strategy key', () => {
    const documented = new Set(tableAfter('## Strategy files').flatMap(([key]) => code(key)));
    const { dca, threshold, target, targetTotal, ...blocks } = KNOWN_KEYS;
    // A block's keys are documented with its name (`budget.perDay`), the target's total as `target.spend`.
    const nested = { ...blocks, target: targetTotal };
    const keys = new Set([
      ...[dca, threshold, target].flat(),
      ...Object.entries(nested).flatMap(([block, names]) => names.map((key) => `${block}.${key}`)),
    ]);
    for (const block of Object.keys(nested)) keys.delete(block);
    expect([...keys].filter((key) => !documented.has(key))).toEqual([]);
  });

  it('names every treasury series with its labels', () => {
    const missing = [];
    for (const [name, family] of workerFamilies()) {
      if (!name.startsWith('treasury_')) continue;
      const spelled = family.labels.length > 0 ? `${name}{${family.labels.join(',')}}` : name;
      if (!readme.includes(`\`${spelled}\``)) missing.push(spelled);
    }
    expect(missing).toEqual([]);
  });

  it('gives the two set-up commands', () => {
    expect(readme).toContain('npm ci && npm start');
    expect(readme).toContain('npm ci && npm test');
  });
});
