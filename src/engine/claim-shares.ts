/**
 * Which live replica claims a scheduled slot first. Every replica's schedule fires for every strategy, so
 * with three replicas each slot used to get three claim statements, two of them lost: in a burst of 1,000
 * due strategies that was 2,000 statements, log lines and limiter turns of pure waste on CPUs that were
 * already the bottleneck. Now each slot has one first claimant among the live replicas (rendezvous
 * hashing: the highest hash of replica, strategy and slot), so live replicas split the due slots without
 * talking to each other, and a replica's death moves only its own share.
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

  constructor(readonly self: string) {}

  /** The replicas seen live at a heartbeat (this one included, when its own beat was written). */
  update(live: readonly string[]): void {
    this.live = [...new Set(live)].sort();
  }

  get replicas(): readonly string[] {
    return this.live;
  }

  /**
   * Whether this replica claims the slot first. Alone, or not (yet) among the live replicas it knows of, it
   * claims everything, as a single replica does.
   */
  isFirstClaimant(strategy: string, slot: Date): boolean {
    if (this.live.length <= 1 || !this.live.includes(this.self)) return true;
    let best = '';
    let bestScore = -1;
    for (const replica of this.live) {
      const score = rendezvousScore(replica, strategy, slot);
      if (score > bestScore) {
        best = replica;
        bestScore = score;
      }
    }
    return best === this.self;
  }
}

function rendezvousScore(replica: string, strategy: string, slot: Date): number {
  return createHash('sha256').update(`${replica}\n${strategy}\n${slot.getTime()}`).digest().readUInt32BE(0);
}
