import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { App } from '../../src/app.js';
import { formatProblem, loadSettings, SettingsError } from '../../src/config/index.js';
import { toDecimalText } from '../../src/money.js';
import { DEFAULT_QUOTE_TOLERANCES, type QuoteTolerances } from '../../src/strategy/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

/** `engine.quoteChecks`: the quote-sanity tolerances, fee allowance included, set by the operator. */

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function settingsDir(yaml: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'treasury-quote-checks-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'settings.yaml'), yaml);
  return dir;
}

const asText = (tolerances: QuoteTolerances) => ({
  costMismatchPct: toDecimalText(tolerances.costMismatchPct),
  costMismatchAbsolute: toDecimalText(tolerances.costMismatchAbsolute),
  feeAllowancePct: toDecimalText(tolerances.feeAllowancePct),
});

const CUSTOM =
  'engine:\n  quoteChecks:\n    feeAllowancePct: "2.5"\n    costMismatchAbsolute: "0.000000000000000001"\n';

describe('engine.quoteChecks', () => {
  it("defaults to the rule's own tolerances", () => {
    const settings = loadSettings({ env: {}, cwd: settingsDir('') });
    expect(asText(settings.engine.quoteChecks)).toEqual(asText(DEFAULT_QUOTE_TOLERANCES));
  });

  it('reads decimal text exactly, keeping the defaults of the keys not written', () => {
    const settings = loadSettings({ env: { TREASURY_CONFIG: 'settings.yaml' }, cwd: settingsDir(CUSTOM) });
    expect(asText(settings.engine.quoteChecks)).toEqual({
      costMismatchPct: '0.5',
      costMismatchAbsolute: '0.000000000000000001',
      feeAllowancePct: '2.5',
    });
  });

  it('refuses numbers, negative and malformed text, naming the position, key and value', () => {
    const dir = settingsDir(
      'engine:\n  quoteChecks:\n    costMismatchPct: "-1"\n    costMismatchAbsolute: "1,5"\n    feeAllowancePct: 1.5\n',
    );
    const file = join(dir, 'settings.yaml');
    let error: unknown;
    try {
      loadSettings({ env: { TREASURY_CONFIG: 'settings.yaml' }, cwd: dir });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(SettingsError);
    expect((error as SettingsError).problems.map(formatProblem)).toEqual([
      `${file}:3:22: engine.quoteChecks.costMismatchPct: expected decimal text of zero or more, such as "0.5" (got "-1")`,
      `${file}:4:27: engine.quoteChecks.costMismatchAbsolute: expected decimal text of zero or more, such as "0.5" (got "1,5")`,
      `${file}:5:22: engine.quoteChecks.feeAllowancePct: expected decimal text in quotes, such as "0.5" (got 1.5)`,
    ]);
  });

  it('reaches the decision rules: the started worker uses the configured tolerances', async () => {
    const dir = settingsDir(CUSTOM);
    const test: TestDatabase = await createTestDatabase();
    cleanups.push(() => test.drop());
    const env = {
      TREASURY_CONFIG: 'settings.yaml',
      ...(test.url ? { DATABASE_URL: test.url } : { TREASURY_DATA_DIR: join(dir, 'data') }),
    };
    const quiet = new Writable({ write: (_chunk, _encoding, done) => done() });
    const app = new App({ mode: 'once', env, cwd: dir, logDestination: quiet });
    cleanups.push(() => app.stop());
    await app.start();
    expect(asText(app.context.tolerances)).toEqual({
      costMismatchPct: '0.5',
      costMismatchAbsolute: '0.000000000000000001',
      feeAllowancePct: '2.5',
    });
  });
});
