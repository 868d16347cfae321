/**
 * A hint for an unknown key: the key of the other strategy kind when that is what was written, otherwise
 * the closest known key when it is a plausible typo (at most two edits, or a case slip), or else the known
 * key that the written one abbreviates (`minCredit` for `minCreditAvailable`).
 */

const OTHER_KIND_HINTS: Record<string, string> = {
  schedule: 'threshold strategies take checkEvery instead of schedule',
  amount: 'a target sizes each order from target and slice: it takes no amount',
  checkEvery: 'dca strategies take schedule instead of checkEvery',
  buyBelow: 'buyBelow belongs to kind threshold',
  every: 'every belongs to kind target (dca strategies take schedule)',
  slice: 'slice belongs to kind target',
  window: 'window belongs to kind target',
};

export function hintForUnknownKey(key: string, knownKeys: readonly string[]): string | undefined {
  const otherKind =
    key === 'schedule' && knownKeys.includes('every')
      ? 'target strategies take every instead of schedule'
      : OTHER_KIND_HINTS[key];
  if (otherKind && !knownKeys.includes(key)) return otherKind;
  let best: { key: string; distance: number } | undefined;
  for (const known of knownKeys) {
    const distance = known.toLowerCase() === key.toLowerCase() ? 0 : editDistance(key, known);
    if (distance <= 2 && (best === undefined || distance < best.distance)) best = { key: known, distance };
  }
  const completion = key.length >= 4 ? knownKeys.find((known) => known.startsWith(key)) : undefined;
  const suggestion = best?.key ?? completion;
  return suggestion ? `did you mean "${suggestion}"?` : undefined;
}

/** Levenshtein distance; keys are short, so the quadratic table is fine. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min(previous[j]! + 1, current[j - 1]! + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length]!;
}
