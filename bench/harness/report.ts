/**
 * The printed table and the JSON results. Every section reports the same row shape, so the table is one
 * loop; targets are shown next to the figure with a verdict, never asserted (a bench measures, it does not
 * fail on a slow machine).
 */
import { writeFile } from 'node:fs/promises';

export interface ReportRow {
  section: string;
  metric: string;
  value: string;
  /** Human text such as "<= 1.25"; empty when the figure has no target. */
  target?: string;
  /** Undefined when there is no target. */
  met?: boolean;
}

export function printTable(title: string, rows: readonly ReportRow[], write = console.log): void {
  const header: ReportRow = { section: 'section', metric: 'metric', value: 'value', target: 'target' };
  const cells = [header, ...rows].map((row) => [
    row.section,
    row.metric,
    row.value,
    row.target ?? '',
    row === header ? 'verdict' : verdictOf(row),
  ]);
  const widths = cells[0]!.map((_, column) => Math.max(...cells.map((line) => line[column]!.length)));
  const render = (line: string[]) => line.map((cell, column) => cell.padEnd(widths[column]!)).join('  ');
  write(`\n${title}`);
  write(render(cells[0]!));
  write(widths.map((width) => '-'.repeat(width)).join('  '));
  for (const line of cells.slice(1)) write(render(line).trimEnd());
}

function verdictOf(row: ReportRow): string {
  if (row.met === undefined) return '';
  return row.met ? 'met' : 'NOT MET';
}

/** Two-space JSON with a trailing newline, in the key order the caller built (the keys are the contract). */
export async function writeJson(path: string, value: unknown): Promise<void> {
  await writeFile(path, `${JSON.stringify(value, null, 2)}\n`);
}

export function formatMs(ms: number): string {
  return `${ms.toFixed(ms < 10 ? 2 : 1)} ms`;
}

export function formatRate(perSecond: number): string {
  return `${Math.round(perSecond).toLocaleString('en-US')}/s`;
}
