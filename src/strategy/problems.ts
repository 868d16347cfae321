/**
 * A problem found in a strategy file, located at the key or value it is about. `message` starts with the
 * key (dotted path) when there is one, so that the one-line form `file:line:col: message` reads on its own.
 */
export interface StrategyProblem {
  file: string;
  /** 1-based. */
  line: number;
  /** 1-based. */
  col: number;
  /** Dotted key path such as `budget.perDay`; empty for problems about a whole file or document. */
  key: string;
  message: string;
}

export function formatProblem(problem: StrategyProblem): string {
  return `${problem.file}:${problem.line}:${problem.col}: ${problem.message}`;
}

/** Problems in reading order: files as listed, then by position. */
export function sortProblems(
  problems: readonly StrategyProblem[],
  files: readonly string[],
): StrategyProblem[] {
  const fileOrder = new Map(files.map((file, index) => [file, index]));
  return [...problems].sort(
    (a, b) =>
      (fileOrder.get(a.file) ?? -1) - (fileOrder.get(b.file) ?? -1) || a.line - b.line || a.col - b.col,
  );
}

/** A value as it should appear in a message: strings quoted, long ones cut, structures named. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'number') return `number ${value}`;
  return String(value);
}
