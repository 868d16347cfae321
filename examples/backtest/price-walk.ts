import { Decimal } from '../../src/money.js';
import { createRng } from '../../src/sandbox/market.js';

/**
 * A synthetic USDT/BRL series for examples and the bench: a random walk in ticks of 0.0001 that drifts up or
 * down for a few days at a time and is pulled gently back towards 5.40, one row per `stepMinutes`. The same
 * seed always gives the same CSV text.
 */
export interface WalkOptions {
  seed: number;
  /** ISO instant of the first row. */
  start: string;
  rows: number;
  stepMinutes: number;
}

const TICK = new Decimal('0.0001');
const CENTRE = new Decimal('5.4000');
const PULL = new Decimal('0.0005');
const FLOOR = new Decimal('1.0000');
const REGIME_ROWS = 3 * 1440;

export function priceWalkCsv({ seed, start, rows, stepMinutes }: WalkOptions): string {
  const rng = createRng(seed);
  const first = Date.parse(start);
  const lines = ['timestamp,price'];
  let price = CENTRE;
  let drift = 0;
  for (let row = 0; row < rows; row++) {
    if (row % Math.max(Math.round(REGIME_ROWS / stepMinutes), 1) === 0) drift = rng.nextInt(-1, 1);
    const noise = rng.nextInt(-6, 6) + drift * 2;
    const pull = CENTRE.minus(price).times(PULL).toDecimalPlaces(4, Decimal.ROUND_HALF_EVEN);
    price = Decimal.max(price.plus(TICK.times(noise)).plus(pull), FLOOR);
    const instant = new Date(first + row * stepMinutes * 60_000).toISOString().replace('.000Z', 'Z');
    lines.push(`${instant},${price.toFixed(4)}`);
  }
  return `${lines.join('\n')}\n`;
}
