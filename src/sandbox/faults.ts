import { z } from 'zod';
import { Decimal } from '../money.js';
import type { Rng } from './market.js';
import {
  type FaultConfig,
  MALFORMED_KINDS,
  type MalformedKind,
  ROUTE_NAMES,
  type RouteFaults,
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
  driftFigure: z.enum(['price', 'amount']).optional(),
  omitQuoteId: z.boolean().optional(),
  rateLimit: z.number().int().min(0).max(1_000_000).optional(),
  retryAfter: z.enum(['seconds', 'date']).optional(),
  retryAfterSeconds: z.number().int().min(0).max(3_600).optional(),
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
  driftFigure: 'price' | 'amount' | null;
  omitQuoteId: boolean;
  /** Set when the route's rate is exceeded: the Retry-After header to answer 429 with. */
  rateLimitedRetryAfter: string | null;
}

const NO_FAULTS: FaultPlan = {
  reset: false,
  error: false,
  delayMs: 0,
  malformed: null,
  acceptThenDrop: false,
  driftFigure: null,
  omitQuoteId: false,
  rateLimitedRetryAfter: null,
};
const DEFAULT_SLOW_MS = 6_000;

/**
 * Decides, with a seeded generator, which injected faults hit a request. Per-route settings override the
 * '*' settings field by field. Draws happen only for rates above zero, so an idle knob does not consume
 * randomness and shift the decisions of the others.
 */
export class FaultInjector {
  private config: FaultConfig = {};
  /** When the requests accepted in the last second arrived, oldest first, per rate-limited scope ('*' or a route). */
  private readonly accepted = new Map<string, number[]>();

  constructor(
    private readonly rng: Rng,
    initial: FaultConfig = {},
    private readonly now: () => number = Date.now,
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
      driftFigure: faults.driftFigure ?? null,
      omitQuoteId: faults.omitQuoteId ?? false,
      rateLimitedRetryAfter: this.overRate(own?.rateLimit !== undefined ? route : '*', faults),
    };
  }

  /**
   * Past the limit of requests in the second before this one, the Retry-After to answer with. A sliding
   * second rather than the calendar one, so two requests a few milliseconds apart always share it; a refused
   * request takes no room.
   */
  private overRate(scope: string, faults: RouteFaults): string | null {
    if (faults.rateLimit === undefined) return null;
    const now = this.now();
    const times = this.accepted.get(scope) ?? [];
    while (times.length > 0 && times[0]! <= now - 1000) times.shift();
    this.accepted.set(scope, times);
    if (times.length < faults.rateLimit) {
      times.push(now);
      return null;
    }
    const seconds = faults.retryAfterSeconds ?? 1;
    // An HTTP date has whole seconds: rounded up, so that it is never sooner than the seconds asked.
    return faults.retryAfter === 'date'
      ? new Date(Math.ceil((now + seconds * 1000) / 1000) * 1000).toUTCString()
      : String(seconds);
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

/**
 * The order records of an answer (a list page's `data`, or one order) as a service with other figures or
 * without quoteIds would send them. The answer is rebuilt, never the ledger: the order itself is unchanged.
 */
export function reshapeOrders(body: unknown, plan: FaultPlan): unknown {
  if (plan.driftFigure === null && !plan.omitQuoteId) return body;
  if (typeof body !== 'object' || body === null) return body;
  const record = body as Record<string, unknown>;
  if (Array.isArray(record.data))
    return { ...record, data: record.data.map((item) => reshapeOrders(item, plan)) };
  if (typeof record.id !== 'string' || !('price' in record)) return body;
  const { quoteId, ...rest } = record;
  const reshaped: Record<string, unknown> = plan.omitQuoteId ? rest : { ...rest, quoteId };
  if (plan.driftFigure === 'price') reshaped.price = lastDigitUp(String(record.price));
  if (plan.driftFigure === 'amount') reshaped.amount = Number(lastDigitUp(String(record.amount)));
  return reshaped;
}

/** "5.4321" → "5.4322", "100" → "101": the same number of digits, one unit more in the last. */
function lastDigitUp(text: string): string {
  const decimals = text.includes('.') ? text.length - text.indexOf('.') - 1 : 0;
  return new Decimal(text).plus(new Decimal(1).dividedBy(10 ** decimals)).toFixed(decimals);
}
