/**
 * Which live replica claims a scheduled slot first. Every replica's schedule fires for every strategy, so
 * with three replicas each slot used to get three claim statements, two of them lost: in a burst of 1,000
 * due strategies that was 2,000 statements, log lines and limiter turns of pure waste on CPUs that were
 * already the bottleneck. Now each strategy has one first claimant among the live replicas (rendezvous
 * hashing: the highest hash of replica and strategy), so live replicas split the due slots without talking
 * to each other, and a replica's death moves only its own share. By strategy, not by slot: the answer is
 * worked out when a strategy is scheduled and when the live set changes, never at a slot's tick (hashing
 * each slot, 30,000 SHA-256 digests per replica in a burst of 10,000, delayed its first order by 0.1 s).
 *
 * The others hold the slot back (scheduler.ts) and, every HANDOVER_CHECK_MS, read in one statement which of
 * their held slots are still unclaimed: those whose first claimant is gone from the live set they claim at
 * once, the rest after MAX_HOLD_MS whatever the live set says (a live replica that does not know the
 * strategy yet, in a roll-out half done, would otherwise never claim it). The unique claim still decides who
 * buys a slot: a disagreement about the live set (a replica joining, a beat late) costs a lost claim or a
 * short delay, never a second order.
 */
import { createHash } from 'node:crypto';

/** How long a held slot waits before the first look at whether its first claimant took it. */
export const HANDOVER_CHECK_MS = 5_000;
/**
 * The longest a slot waits for a first claimant that is live but does not claim it. Longer than a live
 * replica needs to reach its share of a burst of 10,000 due strategies on two cores (bench/README).
 */
export const MAX_HOLD_MS = 30_000;

export class ClaimShares {
  /** The live replicas as of the last heartbeat, sorted; empty until the first one. */
  private live: readonly string[] = [];
  /** Whether this replica claims a strategy's slots first, for the current live set (hashing costs µs). */
  private readonly first = new Map<string, boolean>();

  constructor(readonly self: string) {}

  /**
   * The replicas seen live at a heartbeat (this one included, when its own beat was written). A change
   * answers again for every strategy asked about so far, here in the beat rather than at the next slot's
   * tick, where 10,000 strategies' digests would delay the burst's first order by about 0.1 s.
   */
  update(live: readonly string[]): void {
    const sorted = [...new Set(live)].sort();
    if (sorted.join('\n') === this.live.join('\n')) return;
    this.live = sorted;
    for (const strategy of this.first.keys()) this.first.set(strategy, this.answer(strategy));
  }

  get replicas(): readonly string[] {
    return this.live;
  }

  /**
   * Whether this replica claims the strategy's slots first. Alone, or not (yet) among the live replicas it
   * knows of, it claims everything, as a single replica does.
   */
  isFirstClaimant(strategy: string): boolean {
    let first = this.first.get(strategy);
    if (first === undefined) {
      first = this.answer(strategy);
      this.first.set(strategy, first);
    }
    return first;
  }

  /** Forgets strategies no longer scheduled, so that the map follows the strategy set. */
  forget(strategy: string): void {
    this.first.delete(strategy);
  }

  private answer(strategy: string): boolean {
    if (this.live.length <= 1 || !this.live.includes(this.self)) return true;
    return firstClaimant(this.live, strategy) === this.self;
  }
}

function firstClaimant(live: readonly string[], strategy: string): string {
  let best = '';
  let bestScore = -1;
  for (const replica of live) {
    const score = createHash('sha256').update(`${replica}\n${strategy}`).digest().readUInt32BE(0);
    if (score > bestScore) {
      best = replica;
      bestScore = score;
    }
  }
  return best;
}
