/**
 * The request limit of each token (console.apiRequestsPerMinute), on this replica: a token bucket that holds
 * a minute's requests and refills evenly, so a script may burst up to the limit and then keeps its pace. A
 * replica counts only what reaches it; behind a load balancer the limit is per replica, which bounds what
 * one runaway script costs each of them.
 */
export interface TokenRateLimit {
  /** Takes one request of the token's budget: 0 when allowed, else the seconds until one is available. */
  take(tokenId: number, now: Date): number;
}

export function createTokenRateLimit(requestsPerMinute: number): TokenRateLimit {
  const perMs = requestsPerMinute / 60_000;
  const buckets = new Map<number, { tokens: number; at: number }>();
  return {
    take(tokenId, now) {
      const at = now.getTime();
      const bucket = buckets.get(tokenId) ?? { tokens: requestsPerMinute, at };
      bucket.tokens = Math.min(requestsPerMinute, bucket.tokens + Math.max(0, at - bucket.at) * perMs);
      bucket.at = at;
      buckets.set(tokenId, bucket);
      if (bucket.tokens >= 1) {
        bucket.tokens -= 1;
        return 0;
      }
      return Math.ceil((1 - bucket.tokens) / perMs / 1000);
    },
  };
}
