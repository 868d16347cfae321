import { z } from 'zod';
import type { Rng } from './rng.js';
import {
  type FaultConfig,
  MALFORMED_KINDS,
  type MalformedKind,
  ROUTE_NAMES,
  type RouteName,
} from './types.js';

const rate = z.number().min(0).max(1);
const delay = z.number().int().min(0).max(600_000);
const routeFaultsSchema = z.strictObject({
  latencyMs: delay.optional(),
  errorRate: rate.optional(),
  resetRate: rate.optional(),
  slowRate: rate.optional(),
  slowMs: delay.optional(),
  malformedRate: rate.optional(),
  malformed: z.enum(MALFORMED_KINDS).optional(),
  acceptThenDropRate: rate.optional(),
});
export const faultConfigSchema = z.strictObject(
  Object.fromEntries(['*', ...ROUTE_NAMES].map((name) => [name, routeFaultsSchema.optional()])),
);

/** What happens to one request, decided before the handler runs. */
export interface FaultPlan {
  reset: boolean;
  error: boolean;
  /** Delay added after the handler ran and before the answer leaves. */
  delayMs: number;
  malformed: MalformedKind | null;
  acceptThenDrop: boolean;
}

const NO_FAULTS: FaultPlan = {
  reset: false,
  error: false,
  delayMs: 0,
  malformed: null,
  acceptThenDrop: false,
};
const DEFAULT_SLOW_MS = 6_000;

/**
 * Decides, with a seeded generator, which injected faults hit a request. Per-route settings override the
 * '*' settings field by field. Draws happen only for rates above zero, so an idle knob does not consume
 * randomness and shift the decisions of the others.
 */
export class FaultInjector {
  private config: FaultConfig = {};

  constructor(
    private readonly rng: Rng,
    initial: FaultConfig = {},
  ) {
    this.replace(initial);
  }

  /** Replaces the whole configuration; throws a zod error naming the bad field. */
  replace(config: unknown): void {
    this.config = faultConfigSchema.parse(config) as FaultConfig;
  }

  current(): FaultConfig {
    return structuredClone(this.config);
  }

  plan(route: RouteName): FaultPlan {
    const wildcard = this.config['*'];
    const own = this.config[route];
    if (wildcard === undefined && own === undefined) return NO_FAULTS;
    const faults = { ...wildcard, ...own };
    const slow = this.hits(faults.slowRate);
    return {
      reset: this.hits(faults.resetRate),
      error: this.hits(faults.errorRate),
      delayMs: (faults.latencyMs ?? 0) + (slow ? (faults.slowMs ?? DEFAULT_SLOW_MS) : 0),
      malformed: this.hits(faults.malformedRate) ? (faults.malformed ?? 'syntax') : null,
      acceptThenDrop: route === 'createOrder' && this.hits(faults.acceptThenDropRate),
    };
  }

  private hits(probability: number | undefined): boolean {
    if (probability === undefined || probability <= 0) return false;
    return this.rng.next() < probability;
  }
}

/**
 * Waits that close() can cut short, so that a sandbox with a 6-second slow fault still stops at once.
 */
export class Delays {
  private readonly pending = new Set<{ timer: NodeJS.Timeout; resolve: () => void }>();

  wait(ms: number): Promise<void> {
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const entry = {
        resolve,
        timer: setTimeout(() => {
          this.pending.delete(entry);
          resolve();
        }, ms),
      };
      this.pending.add(entry);
    });
  }

  cancelAll(): void {
    for (const entry of this.pending) {
      clearTimeout(entry.timer);
      entry.resolve();
    }
    this.pending.clear();
  }
}
