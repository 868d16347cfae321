import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { type LocatedStrategy, parseStrategyText } from './parse-documents.js';
import { formatProblem, type StrategyProblem, sortProblems } from './problems.js';
import type { Strategy } from './types.js';

/**
 * Loads strategy files: a folder (every *.yaml and *.yml in it, sorted by name, not recursive) or one
 * file. The result is all or nothing: either every strategy of every file is valid and returned, or
 * nothing is and every problem found in every file and document is returned, so an operator fixes a
 * folder in one round and a worker never runs a half-applied set.
 */

export type LoadResult =
  | { valid: true; files: string[]; strategies: Strategy[] }
  | { valid: false; files: string[]; problems: StrategyProblem[] };

export class StrategyLoadError extends Error {
  override readonly name = 'StrategyLoadError';
  readonly code = 'STRATEGY_INVALID';
  constructor(readonly problems: readonly StrategyProblem[]) {
    super(
      `${problems.length} problem${problems.length === 1 ? '' : 's'} in strategy files:\n` +
        problems.map(formatProblem).join('\n'),
    );
  }
}

export async function loadStrategies(path: string): Promise<LoadResult> {
  const listing = await listStrategyFiles(path);
  if ('problem' in listing) return { valid: false, files: [], problems: [listing.problem] };
  const { files } = listing;
  const located: LocatedStrategy[] = [];
  const problems: StrategyProblem[] = [];
  for (const file of files) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      problems.push(fileProblem(file, `cannot read the file (${(error as NodeJS.ErrnoException).code})`));
      continue;
    }
    const parsed = parseStrategyText(text, file);
    located.push(...parsed.strategies);
    problems.push(...parsed.problems);
  }
  problems.push(...findDuplicateNames(located));
  if (problems.length > 0) return { valid: false, files, problems: sortProblems(problems, files) };
  return { valid: true, files, strategies: located.map((entry) => entry.strategy) };
}

/** Like loadStrategies, for callers that cannot go on without a valid set (the worker's start). */
export async function loadStrategiesOrThrow(path: string): Promise<Strategy[]> {
  const result = await loadStrategies(path);
  if (!result.valid) throw new StrategyLoadError(result.problems);
  return result.strategies;
}

async function listStrategyFiles(path: string): Promise<{ files: string[] } | { problem: StrategyProblem }> {
  let isFolder: boolean;
  try {
    isFolder = (await stat(path)).isDirectory();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code === 'ENOENT' ? 'no such file or folder' : `cannot read it (${code})`;
    return { problem: fileProblem(path, reason) };
  }
  if (!isFolder) return { files: [path] };
  const names = (await readdir(path, { withFileTypes: true }))
    .filter((entry) => entry.isFile() && /\.ya?ml$/i.test(entry.name))
    .map((entry) => entry.name)
    .sort();
  if (names.length === 0) return { problem: fileProblem(path, 'the folder holds no *.yaml or *.yml file') };
  return { files: names.map((name) => join(path, name)) };
}

function findDuplicateNames(located: readonly LocatedStrategy[]): StrategyProblem[] {
  const first = new Map<string, LocatedStrategy>();
  const problems: StrategyProblem[] = [];
  for (const entry of located) {
    const earlier = first.get(entry.strategy.name);
    if (!earlier) {
      first.set(entry.strategy.name, entry);
      continue;
    }
    const where = `${earlier.strategy.source.file}:${earlier.namePosition.line}:${earlier.namePosition.col}`;
    problems.push({
      file: entry.strategy.source.file,
      ...entry.namePosition,
      key: 'name',
      message: `name: duplicate strategy name "${entry.strategy.name}" (first defined at ${where})`,
    });
  }
  return problems;
}

function fileProblem(file: string, message: string): StrategyProblem {
  return { file, line: 1, col: 1, key: '', message };
}

/** PATH argument, else TREASURY_STRATEGIES, else ./strategies (the outside contract's default). */
export function resolveStrategiesPath(
  path: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): string {
  return path ?? (env.TREASURY_STRATEGIES || 'strategies');
}
