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
