/**
 * A token bucket that bounds the tracking requests one replica sends, polls and nudges together, so that a
 * burst of webhooks or a backlog of due orders cannot flood the service. Waiters are served in order.
 */
export class RateLimiter {
  private tokens: number;
  private last: number;
  private readonly waiters: { resolve: () => void; reject: (error: Error) => void }[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly perSecond: number,
    private readonly burst: number = Math.max(1, Math.ceil(perSecond)),
    private readonly now: () => number = () => performance.now(),
  ) {
    this.tokens = burst;
    this.last = now();
  }

  /** Resolves when a request may be sent; rejects with `signal.reason` when the signal fires first. */
  acquire(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    this.refill();
    if (this.waiters.length === 0 && this.tokens >= 1) {
      this.tokens -= 1;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const waiter = {
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        reject,
      };
      const onAbort = () => {
        const index = this.waiters.indexOf(waiter);
        if (index >= 0) this.waiters.splice(index, 1);
        reject(signal?.reason as Error);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
      this.schedule();
    });
  }

  private refill(): void {
    const now = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.perSecond);
    this.last = now;
  }

  private schedule(): void {
    if (this.timer !== undefined) return;
    const wait = Math.max(1, Math.ceil(((1 - this.tokens) / this.perSecond) * 1000));
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.refill();
      while (this.waiters.length > 0 && this.tokens >= 1) {
        this.tokens -= 1;
        this.waiters.shift()?.resolve();
      }
      if (this.waiters.length > 0) this.schedule();
    }, wait);
  }
}
