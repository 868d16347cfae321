/**
 * Durations as operators write them in strategy files: one or more whole-number parts with a unit, largest
 * first, such as `30s`, `15m`, `1h`, `1d` or `1h30m`. Carried as milliseconds inside.
 */

const UNIT_MS = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1000 } as const;
type Unit = keyof typeof UNIT_MS;
const UNITS_LARGEST_FIRST: readonly Unit[] = ['d', 'h', 'm', 's'];

const DURATION_TEXT = /^(\d+d)?(\d+h)?(\d+m)?(\d+s)?$/;

/** Milliseconds, or undefined when the text is not a duration in the form above. */
export function parseDuration(text: string): number | undefined {
  const match = DURATION_TEXT.exec(text);
  if (!match || text === '') return undefined;
  let total = 0;
  for (const part of match.slice(1)) {
    if (part === undefined) continue;
    const unit = part.slice(-1) as Unit;
    total += Number(part.slice(0, -1)) * UNIT_MS[unit];
  }
  return Number.isSafeInteger(total) ? total : undefined;
}

/** The shortest text that `parseDuration` reads back as the same milliseconds (sub-second parts dropped). */
export function formatDuration(milliseconds: number): string {
  let rest = Math.floor(milliseconds / 1000) * 1000;
  if (rest === 0) return '0s';
  let text = '';
  for (const unit of UNITS_LARGEST_FIRST) {
    const count = Math.floor(rest / UNIT_MS[unit]);
    if (count > 0) text += `${count}${unit}`;
    rest -= count * UNIT_MS[unit];
  }
  return text;
}
