import type { ControlRepository, ControlState } from '../db/index.js';
import type { Metrics } from '../observability/metrics.js';

/**
 * The kill switch, shared by every replica through the database. Reads are cached for at most `cacheMs`
 * (≤ 1 s), so a pause reaches every replica within a second without a query on every cycle; the cycle asks
 * again right before it commits an intent. A failed read throws: the caller must not place an order when
 * it cannot tell whether it is allowed to.
 */
export interface KillSwitchOptions {
  control: ControlRepository;
  cacheMs: number;
  clock: () => Date;
  metrics?: Metrics;
  /** Called when a read finds the switch flipped (including the first read), e.g. to log it loudly. */
  onChange?: (state: ControlState) => void;
}

export class KillSwitch {
  private cached: { state: ControlState; readAt: number } | undefined;

  constructor(private readonly options: KillSwitchOptions) {}

  async isPaused(): Promise<boolean> {
    return (await this.current()).paused;
  }

  /** The switch as last read, at most `cacheMs` old. */
  async current(): Promise<ControlState> {
    const now = this.options.clock().getTime();
    if (this.cached && now - this.cached.readAt < this.options.cacheMs) return this.cached.state;
    // Aged from the moment of asking: a slow read must not stretch how long its answer is trusted.
    return this.remember(await this.options.control.get(), now);
  }

  /** The last value read, without a query (readiness labels); undefined before the first read. */
  lastKnown(): ControlState | undefined {
    return this.cached?.state;
  }

  async pause(reason: string | null, by: string): Promise<ControlState> {
    return this.remember(await this.options.control.pause(reason, by));
  }

  async resume(by: string): Promise<ControlState> {
    return this.remember(await this.options.control.resume(by));
  }

  private remember(state: ControlState, readAt = this.options.clock().getTime()): ControlState {
    const changed = this.cached === undefined || this.cached.state.paused !== state.paused;
    this.cached = { state, readAt };
    if (changed) this.options.onChange?.(state);
    this.options.metrics?.paused.set(state.paused ? 1 : 0);
    return state;
  }
}
