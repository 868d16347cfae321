import { servicePrice } from '../backtest/fill.js';
import type { PriceSeries } from '../backtest/price-series.js';
import { Decimal, formatMoney } from '../money.js';

/**
 * The one market the sandbox simulates: USDT bought with BRL, delivered on Tron. The addresses are fixed,
 * well-formed Tron addresses so that clients validating their shape accept them.
 */
export const SYMBOL = 'USDTBRL';
export const CRYPTO_CURRENCY = 'USDT';
export const FIAT_CURRENCY = 'BRL';
export const NETWORK = 'tron';
export const HOT_WALLET_ADDRESS = 'TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLSE';
export const CLIENT_WALLET_ADDRESS = 'TLa2f6VPqDgRE67v1736s7bJ8Ray5wYjU7';
/** Tron block height around the time the sandbox was written; only needs to look plausible and grow. */
export const FIRST_BLOCK_NUMBER = 61_000_000;

/**
 * A small seeded generator (mulberry32). The sandbox must replay the same prices and the same fault
 * decisions for the same seed, which Math.random cannot give.
 */
export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [min, max]. */
  nextInt(min: number, max: number): number;
}

export function createRng(seed: number): Rng {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    nextInt: (min, max) => min + Math.floor(next() * (max - min + 1)),
  };
}

/** Derives independent streams from one seed, so that fault decisions never shift the price sequence. */
export function deriveSeed(seed: number, stream: number): number {
  return (Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) + Math.imul(stream, 0xc2b2ae35)) >>> 0;
}

const TICK = new Decimal('0.0001');
const MAX_TICKS_PER_STEP = 20;
/** Fraction of the distance to the centre closed on each step: keeps the walk near the configured price. */
const REVERSION = new Decimal('0.05');
const FLOOR = new Decimal('0.0100');

/** Where the sandbox's quotes take their price: a random walk, or a recorded series replayed. */
export interface PriceSource {
  /** The price of the next quote, at the service's 4 decimals. */
  nextPrice(): Decimal;
}

/**
 * A mean-reverting random walk in steps of 0.0001 around a centre price, advanced once per quote. The walk
 * is driven only by its seeded generator, so a seed replays the same price sequence.
 */
export class PriceFeed implements PriceSource {
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

export interface ReplayOptions {
  series: PriceSeries;
  /** Series time runs this many times faster than the sandbox's clock. */
  speed: number;
  /** The sandbox clock reading (ms) that maps to the series' first row. */
  origin: number;
}

/**
 * A recorded series replayed against the sandbox's clock: a quote at clock time t takes the series' last
 * price at or before first + (t − origin) × speed, as a backtest of the same series would. After the last
 * row the last price holds.
 */
export class ReplayFeed implements PriceSource {
  constructor(
    private readonly options: ReplayOptions,
    private readonly now: () => number,
  ) {}

  /** The series instant the sandbox's clock stands at. */
  seriesTime(): number {
    const { series, speed, origin } = this.options;
    return series.first + Math.max(this.now() - origin, 0) * speed;
  }

  nextPrice(): Decimal {
    return servicePrice(this.options.series.priceAt(this.seriesTime())!);
  }
}
