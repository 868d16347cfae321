import { Decimal, formatMoney } from '../money.js';
import type { Rng } from './rng.js';

const TICK = new Decimal('0.0001');
const MAX_TICKS_PER_STEP = 20;
/** Fraction of the distance to the centre closed on each step: keeps the walk near the configured price. */
const REVERSION = new Decimal('0.05');
const FLOOR = new Decimal('0.0100');

/**
 * A mean-reverting random walk in steps of 0.0001 around a centre price, advanced once per quote. The walk
 * is driven only by its seeded generator, so a seed replays the same price sequence.
 */
export class PriceFeed {
  private current: Decimal;

  constructor(
    private readonly centre: Decimal,
    private readonly rng: Rng,
  ) {
    this.current = centre;
  }

  /** The next price, 4 decimals. */
  nextPrice(): Decimal {
    const noise = TICK.times(this.rng.nextInt(-MAX_TICKS_PER_STEP, MAX_TICKS_PER_STEP));
    const pull = this.centre.minus(this.current).times(REVERSION);
    const moved = new Decimal(formatMoney(this.current.plus(pull).plus(noise), 4, 'halfEven'));
    this.current = Decimal.max(moved, FLOOR);
    return this.current;
  }
}
