import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { toDecimalText } from '../../src/money.js';
import {
  formatProblem,
  loadStrategies,
  loadStrategiesOrThrow,
  parseStrategyText,
  resolveStrategiesPath,
  StrategyLoadError,
  strategyHash,
} from '../../src/strategy/index.js';
import { readYamlDocuments } from '../../src/strategy/yaml-source.js';

const FIXTURES = 'test/fixtures/strategies';
const badFiles = readdirSync(join(FIXTURES, 'bad')).filter((name) => name.endsWith('.yaml'));

/** The `# expect: line:col: message` comments at the top of a fixture, as full problem lines. */
function expectedProblems(file: string): string[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('# expect: '))
    .map((line) => `${file}:${line.slice('# expect: '.length)}`);
}

describe('bad strategy files report exactly the expected problems', () => {
  it('the corpus is not empty and every file states its expectations', () => {
    expect(badFiles.length).toBeGreaterThanOrEqual(12);
    for (const name of badFiles) expect(expectedProblems(join(FIXTURES, 'bad', name)), name).not.toEqual([]);
  });

  it.each(badFiles)('%s', async (name) => {
    const file = join(FIXTURES, 'bad', name);
    const result = await loadStrategies(file);
    expect(result.valid).toBe(false);
    const problems = result.valid ? [] : result.problems;
    expect(problems.map(formatProblem)).toEqual(expectedProblems(file));
  });

  it('a folder reports the problems of every file in one pass, in file order', async () => {
    const result = await loadStrategies(join(FIXTURES, 'bad'));
    const expected = [...badFiles].sort().flatMap((name) => expectedProblems(join(FIXTURES, 'bad', name)));
    expect(result.valid ? [] : result.problems.map(formatProblem)).toEqual(expected);
  });
});

describe('loading', () => {
  it('reports a name used twice, in one file or across files, at the later definition', async () => {
    const result = await loadStrategies(join(FIXTURES, 'duplicate'));
    expect(result.valid ? [] : result.problems.map(formatProblem)).toEqual([
      `${FIXTURES}/duplicate/b.yaml:7:7: name: duplicate strategy name "same-name" (first defined at ${FIXTURES}/duplicate/a.yaml:1:7)`,
      `${FIXTURES}/duplicate/b.yaml:13:7: name: duplicate strategy name "other" (first defined at ${FIXTURES}/duplicate/b.yaml:1:7)`,
    ]);
  });

  it('applies nothing when one file of a folder is bad, and reads only *.yaml and *.yml', async () => {
    const result = await loadStrategies(join(FIXTURES, 'mixed'));
    expect(result).toEqual({
      valid: false,
      files: [`${FIXTURES}/mixed/bad.yml`, `${FIXTURES}/mixed/good.yaml`],
      problems: [expect.objectContaining({ line: 4, col: 9, key: 'amount' })],
    });
    await expect(loadStrategiesOrThrow(join(FIXTURES, 'mixed'))).rejects.toThrow(StrategyLoadError);
    await expect(loadStrategiesOrThrow(join(FIXTURES, 'mixed'))).rejects.toMatchObject({
      code: 'STRATEGY_INVALID',
      message: `1 problem in strategy files:\n${FIXTURES}/mixed/bad.yml:4:9: amount: must be greater than 0 (got "-100.00")`,
    });
  });

  it('reports a missing path and an empty folder', async () => {
    const missing = await loadStrategies('test/fixtures/no-such-folder');
    expect(missing.valid ? [] : missing.problems.map(formatProblem)).toEqual([
      'test/fixtures/no-such-folder:1:1: no such file or folder',
    ]);
    const empty = await loadStrategies(`${FIXTURES}/no-yaml`);
    expect(empty.valid ? [] : empty.problems.map(formatProblem)).toEqual([
      `${FIXTURES}/no-yaml:1:1: the folder holds no *.yaml or *.yml file`,
    ]);
  });

  it('reads every key into the domain record', async () => {
    const { strategies } = await loadStrategiesOrThrow(join(FIXTURES, 'valid'));
    const [full, minimal] = strategies;
    expect(full).toMatchObject({
      kind: 'dca',
      name: 'full-dca',
      symbol: 'USDTBRL',
      schedule: '0 10 * * 1-5',
      timezone: 'America/Sao_Paulo',
      cooldownMs: 5_400_000,
      missed: 'once',
      missedGraceMs: 1_800_000,
      enabled: false,
      dryRun: true,
      note: 'Owned by finance.',
      source: { file: `${FIXTURES}/valid/full.yaml`, line: 2 },
    });
    expect(full && toDecimalText(full.amount)).toBe('2500');
    expect(full?.maxPrice && toDecimalText(full.maxPrice)).toBe('5.9');
    expect(full?.budget?.perMonth && toDecimalText(full.budget.perMonth)).toBe('150000.5');
    expect(full?.guards?.maxCreditUsedPct && toDecimalText(full.guards.maxCreditUsedPct)).toBe('80.5');
    expect(full?.guards?.requireCanWithdraw).toBe(true);
    expect(minimal).toMatchObject({
      kind: 'threshold',
      name: 'minimal-threshold',
      schedule: '*/15 * * * * *',
      timezone: 'UTC',
      missed: 'skip',
      missedGraceMs: 600_000,
      enabled: true,
      dryRun: false,
      source: { line: 23 },
    });
    expect(minimal && Object.keys(minimal).sort()).toEqual(
      [
        'kind',
        'name',
        'symbol',
        'amount',
        'schedule',
        'timezone',
        'buyBelow',
        'missed',
        'missedGraceMs',
        'enabled',
        'dryRun',
        'source',
      ].sort(),
    );
  });

  it('the example strategies shipped for npm start are valid', async () => {
    const result = await loadStrategies('strategies');
    expect(
      result.valid ? result.strategies.map((strategy) => strategy.name) : result.problems.map(formatProblem),
    ).toEqual(['demo-dca', 'demo-dip-buyer', 'weekday-dca']);
  });

  it('takes PATH, else TREASURY_STRATEGIES, else ./strategies', () => {
    expect(resolveStrategiesPath('x.yaml', { TREASURY_STRATEGIES: 'y' })).toBe('x.yaml');
    expect(resolveStrategiesPath(undefined, { TREASURY_STRATEGIES: 'y' })).toBe('y');
    expect(resolveStrategiesPath(undefined, {})).toBe('strategies');
  });
});

describe('the documents as written', () => {
  it('keeps each document with its comments and without its separator, for the strategy versions', () => {
    const text = '# first, owned by finance\nname: a\nkind: dca # a comment\n\n---\n# second\nname: b\n---\n';
    const documents = [...readYamlDocuments(text, 'x.yaml')].flatMap((step) => step.document?.text ?? []);
    expect(documents).toEqual([
      '# first, owned by finance\nname: a\nkind: dca # a comment\n',
      '# second\nname: b\n',
    ]);
  });
});

describe('strategyHash', () => {
  const base =
    'name: h\nkind: dca\nsymbol: USDTBRL\namount: "2500.00"\nschedule: "0 10 * * *"\ncooldown: 1h\n';
  const hashOf = (text: string, file = 'a.yaml') => {
    const { strategies, problems } = parseStrategyText(text, file);
    expect(problems).toEqual([]);
    return strategyHash(strategies[0]!.strategy);
  };

  it('ignores where and how a value is written', () => {
    const hash = hashOf(base);
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
    expect(hashOf(`# comment\n${base}`, 'elsewhere.yaml')).toBe(hash);
    expect(hashOf(base.replace('"2500.00"', '"2500"').replace('1h', '60m'))).toBe(hash);
    expect(hashOf(`enabled: true\n${base}`)).toBe(hash); // the default, written out
  });

  it('changes with any setting', () => {
    const hash = hashOf(base);
    expect(hashOf(base.replace('"2500.00"', '"2500.01"'))).not.toBe(hash);
    expect(hashOf(base.replace('0 10', '0 11'))).not.toBe(hash);
    expect(hashOf(`${base}dryRun: true\n`)).not.toBe(hash);
    expect(hashOf(`${base}timezone: America/Sao_Paulo\n`)).not.toBe(hash);
  });
});
