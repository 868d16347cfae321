/**
 * When to look at an open order again. Settlement moves in bursts (a deposit, then the rest; a withdrawal,
 * then its confirmation), so the delay grows with the time since the order last changed: quick right after
 * any progress, slower while nothing happens. Failed tracking calls back off exponentially on top of that.
 */
export interface BackoffSettings {
  minDelayMs: number;
  maxDelayMs: number;
  /** Delay as a share of the time since the last progress. */
  ageFactor: number;
}

/** ±10 %: replicas and orders placed together should not poll in lockstep. */
const JITTER = 0.1;

export function nextCheckDelayMs(
  settings: BackoffSettings,
  sinceProgressMs: number,
  random: () => number = Math.random,
): number {
  const wanted = Math.max(0, sinceProgressMs) * settings.ageFactor;
  return withJitter(clamp(wanted, settings), random, settings);
}

/** After `failures` consecutive failed calls (1 = the first failure). */
export function failureDelayMs(
  settings: BackoffSettings,
  sinceProgressMs: number,
  failures: number,
  random: () => number = Math.random,
): number {
  const exponential = settings.minDelayMs * 2 ** Math.min(Math.max(failures, 1), 30);
  const normal = Math.max(0, sinceProgressMs) * settings.ageFactor;
  return withJitter(clamp(Math.max(exponential, normal), settings), random, settings);
}

function clamp(ms: number, settings: BackoffSettings): number {
  return Math.min(settings.maxDelayMs, Math.max(settings.minDelayMs, ms));
}

function withJitter(ms: number, random: () => number, settings: BackoffSettings): number {
  const jittered = ms * (1 + (random() * 2 - 1) * JITTER);
  return Math.round(Math.min(settings.maxDelayMs, Math.max(settings.minDelayMs, jittered)));
}
