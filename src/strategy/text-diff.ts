/**
 * A unified text diff (the `diff -u` form) of two strategy documents, as a strategy version stores it
 * against the version before. Written here rather than taken from a library: a strategy document is tens
 * of lines, so the textbook longest-common-subsequence table is instant and easy to check, and the whole
 * job is some 80 lines against a dependency for every Node release the worker supports.
 */

export interface DiffLabels {
  /** The `---` line's name of the old text, e.g. `weekday-dca version 1`. */
  from: string;
  /** The `+++` line's name of the new text. */
  to: string;
}

/** Unchanged lines shown around each change, as `diff -u` does by default. */
const CONTEXT = 3;

/**
 * Beyond this many cells (old lines × new lines) the table would cost more memory than a strategy is worth
 * (a document of 3,000 lines): the diff then shows every old line removed and every new one added.
 */
const MAX_TABLE_CELLS = 9_000_000;

type Edit = { kind: ' ' | '-' | '+'; line: string };

/** The diff of `before` and `after`, or '' when they hold the same lines. */
export function unifiedDiff(before: string, after: string, labels: DiffLabels): string {
  const edits = editScript(splitLines(before), splitLines(after));
  if (edits.every((edit) => edit.kind === ' ')) return '';
  const out = [`--- ${labels.from}`, `+++ ${labels.to}`];
  for (const hunk of hunksOf(edits)) out.push(...hunk);
  return `${out.join('\n')}\n`;
}

function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split(/\r?\n/);
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

/** The edits that turn `a` into `b`, keeping a longest common subsequence of lines. */
function editScript(a: readonly string[], b: readonly string[]): Edit[] {
  if (a.length * b.length > MAX_TABLE_CELLS) {
    return [
      ...a.map((line) => ({ kind: '-' as const, line })),
      ...b.map((line) => ({ kind: '+' as const, line })),
    ];
  }
  // common[i][j]: length of the longest common subsequence of a[i..] and b[j..], row-major.
  const width = b.length + 1;
  const common = new Uint32Array((a.length + 1) * width);
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      common[i * width + j] =
        a[i] === b[j]
          ? (common[(i + 1) * width + j + 1] ?? 0) + 1
          : Math.max(common[(i + 1) * width + j] ?? 0, common[i * width + j + 1] ?? 0);
    }
  }
  const edits: Edit[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      edits.push({ kind: ' ', line: a[i++]! });
      j++;
    } else if ((common[(i + 1) * width + j] ?? 0) >= (common[i * width + j + 1] ?? 0)) {
      edits.push({ kind: '-', line: a[i++]! });
    } else {
      edits.push({ kind: '+', line: b[j++]! });
    }
  }
  while (i < a.length) edits.push({ kind: '-', line: a[i++]! });
  while (j < b.length) edits.push({ kind: '+', line: b[j++]! });
  return edits;
}

/** Groups the edits into hunks with their `@@ -start,count +start,count @@` headers. */
function hunksOf(edits: readonly Edit[]): string[][] {
  const changed = edits.flatMap((edit, index) => (edit.kind === ' ' ? [] : [index]));
  const hunks: string[][] = [];
  let first = 0;
  while (first < changed.length) {
    // A hunk runs on while at most two contexts of unchanged lines separate the next change from the last.
    let last = first;
    while (last + 1 < changed.length && changed[last + 1]! - changed[last]! - 1 <= 2 * CONTEXT) last++;
    const start = Math.max(0, changed[first]! - CONTEXT);
    const end = Math.min(edits.length, changed[last]! + CONTEXT + 1);
    hunks.push(hunk(edits, start, end));
    first = last + 1;
  }
  return hunks;
}

function hunk(edits: readonly Edit[], start: number, end: number): string[] {
  // Line numbers of the hunk's first line in each text: the edits before it that belong to that text.
  let oldLine = 1;
  let newLine = 1;
  for (const edit of edits.slice(0, start)) {
    if (edit.kind !== '+') oldLine++;
    if (edit.kind !== '-') newLine++;
  }
  const body = edits.slice(start, end);
  const oldCount = body.filter((edit) => edit.kind !== '+').length;
  const newCount = body.filter((edit) => edit.kind !== '-').length;
  // As diff -u: a range of no lines is numbered from the line before it.
  const range = (line: number, count: number) => `${count === 0 ? line - 1 : line},${count}`;
  return [
    `@@ -${range(oldLine, oldCount)} +${range(newLine, newCount)} @@`,
    ...body.map((edit) => `${edit.kind}${edit.line}`),
  ];
}
