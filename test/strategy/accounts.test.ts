/**
 * A strategy's account: checked against the deployment's accounts when they are known, required once there
 * are several, and part of the configuration (a change of account is a change of version like any other).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isDemo, loadSettings } from '../../src/config/index.js';
import {
  accountOf,
  formatProblem,
  loadStrategies,
  parseStrategyText,
  strategyHash,
} from '../../src/strategy/index.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const DOCUMENT = `name: weekly
kind: dca
symbol: USDTBRL
amount: "100.00"
schedule: "0 10 * * 1"
timezone: UTC
`;

function folderWith(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'treasury-strategy-accounts-'));
  dirs.push(dir);
  writeFileSync(join(dir, 's.yaml'), text);
  return dir;
}

async function problemsOf(text: string, accounts?: readonly string[]): Promise<string[]> {
  const dir = folderWith(text);
  const result = await loadStrategies(dir, accounts);
  return result.valid ? [] : result.problems.map((problem) => formatProblem(problem).replace(dir, 'DIR'));
}

describe("a strategy's account", () => {
  it('may be left out in a deployment of one account, which is then `default`', async () => {
    expect(await problemsOf(DOCUMENT, ['default'])).toEqual([]);
    const [located] = parseStrategyText(DOCUMENT, 's.yaml').strategies;
    expect(accountOf(located!.strategy)).toBe('default');
  });

  it('is required once the deployment has several accounts, and must be one of them', async () => {
    expect(await problemsOf(DOCUMENT, ['northco', 'southco'])).toEqual([
      'DIR/s.yaml:1:7: account: required: this deployment has several accounts (northco, southco)',
    ]);
    expect(await problemsOf(`account: westco\n${DOCUMENT}`, ['northco', 'southco'])).toEqual([
      'DIR/s.yaml:2:7: account: unknown account "westco" (the settings have northco, southco)',
    ]);
    expect(await problemsOf(`account: southco\n${DOCUMENT}`, ['northco', 'southco'])).toEqual([]);
  });

  it('must be a plain name, checked with the rest of the document', async () => {
    const problems = await problemsOf(`account: North Co\n${DOCUMENT}`);
    expect(problems).toEqual([expect.stringContaining('account: must be an account name')]);
  });

  it('is part of the configuration: a strategy moved to another account is another version', () => {
    const hashOf = (text: string) => strategyHash(parseStrategyText(text, 's.yaml').strategies[0]!.strategy);
    const unnamed = hashOf(DOCUMENT);
    expect(hashOf(`account: northco\n${DOCUMENT}`)).not.toBe(unnamed);
    expect(hashOf(`account: northco\n${DOCUMENT}`)).not.toBe(hashOf(`account: southco\n${DOCUMENT}`));
  });
});

describe('the two-entity demo of npm start', () => {
  it('config/demo.yaml names two sandbox accounts whose strategies are valid', async () => {
    const settings = loadSettings({ env: { TREASURY_CONFIG: 'config/demo.yaml' }, cwd: process.cwd() });
    const names = settings.accounts.map((account) => account.name);
    expect(names).toEqual(['northco', 'southco']);
    expect(isDemo(settings)).toBe(true);
    const result = await loadStrategies(settings.strategies.path, names);
    expect(
      result.valid
        ? result.strategies.map((strategy) => accountOf(strategy))
        : result.problems.map(formatProblem),
    ).toEqual(['northco', 'southco']);
  });
});
