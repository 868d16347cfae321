/**
 * Which stretch of time the next external-order scan lists. The service lists newest first and we read at
 * most `maxPages` pages, so a scan cut short has seen only the top of its window: the part below the
 * oldest order it read is scanned next, and only once that part was read to the end does the scan move
 * on to newer orders. Moving on at once would leave those older orders unrecorded for good.
 */

/** Each scan re-reads a little of the previous window, in case an order became visible late. */
export const SCAN_OVERLAP_MS = 60_000;

export interface ScanWindow {
  from: Date;
  to: Date;
}

export class ExternalScanWindow {
  /** Every order listed at or before this instant was read by a scan of this process. */
  private scannedUntil: Date | undefined;
  /** Left by a scan cut short: [from, below] is still unread; `top` is where that scan's window ended. */
  private unread: { below: Date; top: Date } | undefined;

  constructor(private readonly settings: { visibilityLagMs: number; externalLookbackMs: number }) {}

  next(now: Date): ScanWindow {
    const earliest = now.getTime() - this.settings.externalLookbackMs;
    const from = new Date(Math.max(earliest, (this.scannedUntil?.getTime() ?? earliest) - SCAN_OVERLAP_MS));
    const to = this.unread?.below ?? new Date(now.getTime() - this.settings.visibilityLagMs);
    return { from, to };
  }

  /** Records what a scan of `window` read: all of it, or only down to its oldest listed order. */
  scanned(window: ScanWindow, result: { complete: boolean; oldestListed?: Date }): void {
    const top = this.unread?.top ?? window.to;
    if (result.complete) {
      this.scannedUntil = top;
      this.unread = undefined;
    } else {
      // Orders at exactly the oldest instant may straddle the cut: `below` is inclusive, so they are read again.
      this.unread = { below: result.oldestListed ?? window.to, top };
    }
  }
}
