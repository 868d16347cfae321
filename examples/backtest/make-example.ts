/**
 * Makes the README's backtest example: 60 days of 15-minute prices from a fixed seed (prices.csv), then
 * `treasury-bot backtest` over them with strategies.yaml, writing its report (report.txt) and chart
 * (chart.svg) next to this file. Run: npx tsx examples/backtest/make-example.ts
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { priceWalkCsv } from './price-walk.js';

const here = (name: string) => fileURLToPath(new URL(name, import.meta.url));
const relative = (name: string) => `examples/backtest/${name}`;
const root = fileURLToPath(new URL('../../', import.meta.url));

writeFileSync(
  here('prices.csv'),
  priceWalkCsv({ seed: 20_260_105, start: '2026-01-05T00:00:00Z', rows: 60 * 96, stepMinutes: 15 }),
);
const args = ['backtest', '--prices', relative('prices.csv'), '--strategies', relative('strategies.yaml')];
const run = (extra: string[]) =>
  execFileSync(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args, ...extra], {
    cwd: root,
    encoding: 'utf8',
  });
writeFileSync(
  here('report.txt'),
  run(['--credit-total', '40000.00', '--settle-delay', '2d', '--chart', relative('chart.svg')]),
);
console.log(`wrote ${relative('prices.csv')}, ${relative('report.txt')} and ${relative('chart.svg')}`);
