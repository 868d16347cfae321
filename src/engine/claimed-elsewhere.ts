/**
 * Slots another process already claimed, learned in bulk during a burst so that this replica does not
 * send a claim it would lose. Every replica dispatches every due slot and the unique claim decides, so R
 * replicas sent R claims per slot, R - 1 of them lost: the database, which replicas share and do not scale,
 * did R times the claims' work. Measured with 1,000 slots and three replicas: 3,000 claims before, 1,146
 * claims and 98 reads after (bench/README.md, "Claims that would be lost").
 *
 * While many cycles of one slot wait in this process's queue, one statement asks which of the next of them
 * already have a cycle, at most every `refreshMs`; a cycle whose turn comes is skipped when the last answer
 * named it. The claim stays the only arbiter: a row of the slot means the claim would be lost, so a skip is
 * the lost claim without its statement, and a cycle the answer did not name claims as before. The read never
 * holds a cycle back: cycles start on what is known, and a failed read only means more claims are sent.
 * The cron triggers hand each replica the burst in its own random order (cron-triggers.ts), so replicas work
 * apart and each learns what the others took before reaching it.
 */
import type { Logger } from '../observability/logger.js';

export interface ClaimedElsewhereOptions {
  /** Which of these strategies have a cycle of the slot (cycles.claimedAmong). */
  read(slot: Date, strategies: string[]): Promise<string[]>;
  logger: Logger;
}

/** Waiting cycles of one slot from which a read is worth its statement. */
const BURST = 16;
/** How many of the next waiting cycles one read asks about. */
const WINDOW = 512;
const REFRESH_MS = 100;

interface SlotState {
  /** Dispatched here and not started, in queue order (a Set keeps insertion order). */
  waiting: Set<string>;
  /** Named by a read while still waiting: their claim would be lost. */
  claimed: Set<string>;
  reading: boolean;
  readAt: number;
}

export class ClaimedElsewhere {
  private readonly slots = new Map<number, SlotState>();

  constructor(private readonly options: ClaimedElsewhereOptions) {}

  /** A cycle of the slot was queued here. */
  queued(strategy: string, slot: Date): void {
    let state = this.slots.get(slot.getTime());
    if (!state) {
      state = { waiting: new Set(), claimed: new Set(), reading: false, readAt: Number.NEGATIVE_INFINITY };
      this.slots.set(slot.getTime(), state);
    }
    state.waiting.add(strategy);
  }

  /**
   * The cycle's turn came (or it was dropped): it stops waiting. True when a read named its slot claimed,
   * so that its claim would be lost.
   */
  started(strategy: string, slot: Date): boolean {
    const key = slot.getTime();
    const state = this.slots.get(key);
    if (!state) return false;
    state.waiting.delete(strategy);
    const claimed = state.claimed.delete(strategy);
    if (state.waiting.size === 0) this.slots.delete(key);
    else this.refresh(slot, state);
    return claimed;
  }

  private refresh(slot: Date, state: SlotState): void {
    if (state.reading || state.waiting.size < BURST) return;
    const now = performance.now();
    if (now - state.readAt < REFRESH_MS) return;
    state.reading = true;
    state.readAt = now;
    const asked: string[] = [];
    for (const strategy of state.waiting) {
      if (asked.length === WINDOW) break;
      if (!state.claimed.has(strategy)) asked.push(strategy);
    }
    this.options
      .read(slot, asked)
      .then((claimed) => {
        // Only cycles still waiting: one that started meanwhile made its own claim, which may be the row read.
        for (const strategy of claimed) if (state.waiting.has(strategy)) state.claimed.add(strategy);
      })
      .catch((error: unknown) => {
        this.options.logger.debug({ slot, err: error }, 'reading the slots claimed elsewhere failed');
      })
      .finally(() => {
        state.reading = false;
      });
  }
}
