import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliInvocation } from '../support/cli.js';

const run = promisify(execFile);

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const [command, argv] = cliInvocation(args);
  try {
    const { stdout, stderr } = await run(command, argv);
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

const STRATEGIES = `name: dip
kind: threshold
symbol: USDTBRL
amount: "1000.00"
checkEvery: "0 * * * *"
timezone: UTC
buyBelow: "5.30"
---
name: daily
kind: dca
symbol: USDTBRL
amount: "100.00"
schedule: "0 12 * * *"
timezone: UTC
`;

describe('treasury-bot backtest', () => {
  let folder: string;
  const path = (name: string) => join(folder, name);
  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'tb-backtest-cli-'));
    await writeFile(path('strategies.yaml'), STRATEGIES);
    await writeFile(
      path('a&b.csv'),
      'timestamp,price\n2026-03-02T10:00:00Z,5.3500\n2026-03-02T11:00:00Z,5.2900\n2026-03-02T12:00:00Z,5.3000\n2026-03-02T13:00:00Z,5.3100\n',
    );
  });
  afterAll(() => rm(folder, { recursive: true, force: true }));

  it('prints per strategy the figures of the run and of plain DCA on the same schedule', async () => {
    const { code, stdout } = await cli([
      'backtest',
      '--prices',
      path('a&b.csv'),
      '--strategies',
      path('strategies.yaml'),
    ]);
    expect(code).toBe(0);
    expect(stdout).toContain('slots from 2026-03-02T10:00:00.000Z to 2026-03-02T13:00:00.000Z');
    expect(stdout).toMatch(/dip: threshold 1000\.00 "0 \* \* \* \*" UTC\n\s+figure\s+strategy\s+plain DCA/);
    expect(stdout).toMatch(/orders\s+2\s+4\n/);
    expect(stdout).toMatch(/spent\s+1999\.98\s+3999\.96\n/);
    expect(stdout).toContain('skipped: price_not_below_threshold 2');
    expect(stdout).toContain('budget-limited periods: 0 days, 0 months');
  });

  it('prints a target against plain TWAP over its window, other kinds as before', async () => {
    await writeFile(
      path('target.yaml'),
      `${STRATEGIES}---
name: payroll
kind: target
symbol: USDTBRL
timezone: UTC
target: { spend: "300.00" }
window: { start: "2026-03-02T10:00:00", end: "2026-03-02T13:00:00" }
every: "0 * * * *"
slice: { min: "50.00", max: "200.00" }
maxPrice: "5.30"
`,
    );
    const { code, stdout } = await cli([
      'backtest',
      '--prices',
      path('a&b.csv'),
      '--strategies',
      path('target.yaml'),
    ]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/dip: threshold 1000\.00 "0 \* \* \* \*" UTC\n\s+figure\s+strategy\s+plain DCA\n/);
    const section = stdout.slice(stdout.indexOf('payroll: '));
    // 10:00 (5.3500) is above maxPrice; 11:00 buys 150.00 (149.99), 12:00 what is left (150.01, 150.00).
    // Plain TWAP buys 100.00 at every slot of the window (13:00 is its end).
    expect(section).toMatch(
      /^payroll: target spend 300\.00 "0 \* \* \* \*" UTC, window 2026-03-02T10:00:00\.000Z to 2026-03-02T13:00:00\.000Z \(3 slots\)\n\s+figure\s+strategy\s+plain TWAP\n\s+slots\s+3\s+3\n\s+orders\s+2\s+3\n\s+spent\s+299\.99\s+299\.97\n/,
    );
    expect(section).toContain('  target: 299.99 of 300.00 spent (100.00%), completed\n');
    expect(section).toContain('  saving against plain TWAP: 1.02 (0.34%): what the quantity bought');
    expect(section).toContain('skipped: price_above_max 1');
  });

  it('prints one JSON document with --json, money as decimal text', async () => {
    const { code, stdout } = await cli([
      'backtest',
      '--prices',
      path('a&b.csv'),
      '--strategies',
      path('strategies.yaml'),
      '--from',
      '2026-03-02T11:00:00Z',
      '--credit-total',
      '5000.00',
      '--json',
    ]);
    expect(code).toBe(0);
    const report = JSON.parse(stdout);
    expect(report).toMatchObject({
      from: '2026-03-02T11:00:00.000Z',
      creditTotal: '5000.00',
      settleDelay: '1d',
    });
    expect(report.strategies[0]).toMatchObject({
      name: 'dip',
      result: { orders: 2, spent: '1999.98', lowestPrice: '5.2900', highestPrice: '5.3000' },
      baseline: { orders: 3 },
    });
    expect(report.strategies[1]).toMatchObject({
      name: 'daily',
      result: { slots: 1, orders: 1, spent: '99.99' },
    });
  });

  it('writes the chart: price, purchases, cumulative spend, every text escaped, nothing from another host', async () => {
    const chart = path('chart.svg');
    const { code } = await cli([
      'backtest',
      '--prices',
      path('a&b.csv'),
      '--strategies',
      path('strategies.yaml'),
      '--chart',
      chart,
    ]);
    expect(code).toBe(0);
    const svg = await readFile(chart, 'utf8');
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg).toContain('a&#38;b.csv');
    expect(svg).not.toContain('a&b.csv');
    // The chart's own title, and three purchases (two of dip, one of daily), each with its title.
    expect(svg.match(/<title>/g)).toHaveLength(4);
    expect(svg).toContain('<title>dip 2026-03-02T11:00:00.000Z price 5.29 cost 999.99</title>');
    expect(svg).toContain('cumulative spend');
    expect(svg.replace('http://www.w3.org/2000/svg', '')).not.toMatch(/https?:|href/);
  });

  it('refuses bad input with a message naming it and exit code 1, no stack', async () => {
    await writeFile(path('no-price.csv'), 'timestamp,close\n2026-03-02T10:00:00Z,5.35\n');
    await writeFile(
      path('bad-price.csv'),
      'timestamp,price\n2026-03-02T10:00:00Z,5.35\n2026-03-02T11:00:00Z,NaN\n',
    );
    await writeFile(
      path('gap.csv'),
      'timestamp,price\n2026-03-02T10:00:00Z,5.35\n2026-03-02T12:00:00Z,5.35\n',
    );
    await writeFile(path('never.yaml'), STRATEGIES.replace('"0 12 * * *"', '"0 12 29 2 *"'));
    const cases: [string[], RegExp][] = [
      [['--prices', path('missing.csv')], /missing\.csv: cannot read the price file \(no such file\)/],
      [['--prices', path('no-price.csv')], /no-price\.csv line 1: the header must name .*`price` missing/],
      [['--prices', path('bad-price.csv')], /bad-price\.csv line 3: price "NaN" is not a positive decimal/],
      [
        ['--prices', path('gap.csv')],
        /gap\.csv line 3: 2h without a price .* allowed gap of 1h \(--max-gap\)/,
      ],
      [
        ['--prices', path('a&b.csv'), '--strategies', path('never.yaml')],
        /strategy daily \(.*never\.yaml:9\): schedule "0 12 29 2 \*" in UTC has no slot from/,
      ],
      [['--prices', path('a&b.csv'), '--from', 'yesterday'], /--from must be ISO 8601 with a zone/],
      [['--prices', path('a&b.csv'), '--credit-total', '1,000'], /--credit-total.*positive decimal/],
      [['--prices', path('a&b.csv'), '--strategies', path('missing.yaml')], /missing\.yaml/],
    ];
    // One child each, all at once: nine sequential starts can outlast the timeout on a busy machine.
    const runs = cases.map(([args]) =>
      cli([
        'backtest',
        ...(args.includes('--strategies') ? args : [...args, '--strategies', path('strategies.yaml')]),
      ]),
    );
    // The gap is a setting.
    const wider = cli([
      'backtest',
      '--prices',
      path('gap.csv'),
      '--max-gap',
      '2h',
      '--strategies',
      path('strategies.yaml'),
    ]);
    for (const [index, { code, stdout, stderr }] of (await Promise.all(runs)).entries()) {
      const [args, message] = cases[index]!;
      expect(code, args.join(' ')).toBe(1);
      expect(stderr).toMatch(message);
      expect(stderr).not.toMatch(/\n\s+at /);
      expect(stdout).toBe('');
    }
    expect((await wider).code).toBe(0);
  }, 120_000);
});

describe('treasury-bot sandbox --prices', () => {
  it('quotes from the series', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'tb-replay-cli-'));
    const file = join(folder, 'prices.csv');
    await writeFile(file, 'timestamp,price\n2026-03-02T10:00:00Z,4.3210\n2026-03-02T11:00:00Z,4.5000\n');
    const child = spawn(...cliInvocation(['sandbox', '--port', '0', '--prices', file, '--speed', '1']), {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let output = '';
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (chunk: Buffer) => {
          output += chunk.toString();
          const match = /sandbox listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
          if (match) resolve(match[1]!);
        });
        child.once('exit', (code) => reject(new Error(`sandbox exited early (${code}): ${output}`)));
      });
      const response = await fetch(`${url}/client/quote?symbols=USDTBRL&amount=100`, {
        headers: { authorization: 'Bearer sandbox-demo-token' },
      });
      expect(((await response.json()) as { price: string }).price).toBe('4.3210');
    } finally {
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
      await rm(folder, { recursive: true, force: true });
    }
  });

  it('refuses a bad series with a message naming it and exit code 1', async () => {
    const { code, stderr } = await cli(['sandbox', '--port', '0', '--prices', '/nonexistent/prices.csv']);
    expect(code).toBe(1);
    expect(stderr).toContain('/nonexistent/prices.csv: cannot read the price file (no such file)');
    const speed = await cli(['sandbox', '--prices', '/nonexistent/prices.csv', '--speed', '0']);
    expect(speed.code).toBe(1);
    expect(speed.stderr).toMatch(/--speed/);
  });
});
