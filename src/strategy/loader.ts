import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { type LocatedStrategy, parseStrategyText } from './parse-documents.js';
import { formatProblem, type StrategyProblem, sortProblems } from './problems.js';
import type { Strategy } from './types.js';

/**
 * Loads strategy files: a folder (every *.yaml and *.yml in it, sorted by name, not recursive, following
 * symbolic links, skipping names that start with a dot) or one file. A Kubernetes ConfigMap mount is such a
 * folder: each file is a link into `..data/`, a link swapped atomically on update, and the dot entries are
 * its internals. The result is all or nothing: either every strategy of every file is valid and returned, or
 * nothing is and every problem found in every file and document is returned, so an operator fixes a
 * folder in one round and a worker never runs a half-applied set.
 */

export type LoadResult =
  | {
      valid: true;
      files: string[];
      strategies: Strategy[];
      /**
       * Each strategy's document as written, by name: what its version records (strategy versions). Slices
       * of the files' text, so the worker reads them once and does not keep them.
       */
      texts: Map<string, string>;
    }
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

/** The account of a strategy that names none: the single account of a one-account deployment. */
export const DEFAULT_ACCOUNT = 'default';

/** The account a strategy buys for. */
export function accountOf(strategy: Pick<Strategy, 'account'>): string {
  return strategy.account ?? DEFAULT_ACCOUNT;
}

/**
 * `accounts`: the deployment's account names (settings). Given, each strategy must name one of them, and
 * must name one at all when there are several; absent (a backtest, a file checked alone), any name goes.
 */
export async function loadStrategies(path: string, accounts?: readonly string[]): Promise<LoadResult> {
  const listing = await listStrategyFiles(path);
  if ('problem' in listing) return { valid: false, files: [], problems: [listing.problem] };
  const { files } = listing;
  const located: LocatedStrategy[] = [];
  const problems: StrategyProblem[] = [];
  for (const file of files) {
    const read = await readStrategyFile(file);
    if ('problem' in read) {
      problems.push(read.problem);
      continue;
    }
    const parsed = parseStrategyText(read.text, file);
    located.push(...parsed.strategies);
    problems.push(...parsed.problems);
  }
  problems.push(...findDuplicateNames(located));
  if (accounts) problems.push(...checkAccounts(located, accounts));
  if (problems.length > 0) return { valid: false, files, problems: sortProblems(problems, files) };
  return {
    valid: true,
    files,
    strategies: located.map((entry) => entry.strategy),
    texts: new Map(located.map((entry) => [entry.strategy.name, entry.text])),
  };
}

export type ValidLoad = Extract<LoadResult, { valid: true }>;

/** Like loadStrategies, for callers that cannot go on without a valid set (the worker's start). */
export async function loadStrategiesOrThrow(path: string, accounts?: readonly string[]): Promise<ValidLoad> {
  const result = await loadStrategies(path, accounts);
  if (!result.valid) throw new StrategyLoadError(result.problems);
  return result;
}

/** Larger files are refused unread: a strategy file of 8 MB already holds some 50,000 strategies. */
const MAX_FILE_BYTES = 8 * 1024 * 1024;

/** The file as UTF-8 text, or the reason it is not a strategy file (binary, another encoding, too large). */
async function readStrategyFile(file: string): Promise<{ text: string } | { problem: StrategyProblem }> {
  let bytes: Buffer;
  try {
    const info = await stat(file);
    if (info.isDirectory()) return { problem: fileProblem(file, 'is a folder, not a strategy file') };
    if (!info.isFile()) return { problem: fileProblem(file, 'is not a regular file') };
    if (info.size > MAX_FILE_BYTES) {
      const mb = (info.size / (1024 * 1024)).toFixed(1);
      return {
        problem: fileProblem(file, `the file is ${mb} MB; a strategy file may be at most 8 MB (split it)`),
      };
    }
    bytes = await readFile(file);
  } catch (error) {
    return { problem: fileProblem(file, `cannot read the file (${(error as NodeJS.ErrnoException).code})`) };
  }
  const nul = bytes.indexOf(0);
  if (nul >= 0) {
    return {
      problem: {
        ...fileProblem(file, 'binary content, not YAML text (a NUL byte)'),
        line: lineAt(bytes, nul),
      },
    };
  }
  try {
    // A byte-order mark is dropped by the decoder; positions then count from the first character.
    return { text: new TextDecoder('utf-8', { fatal: true }).decode(bytes) };
  } catch {
    const line = firstLineNotUtf8(bytes);
    return { problem: { ...fileProblem(file, 'not UTF-8 text (save the file as UTF-8)'), line } };
  }
}

function lineAt(bytes: Buffer, offset: number): number {
  let line = 1;
  for (let index = bytes.indexOf(10); index !== -1 && index < offset; index = bytes.indexOf(10, index + 1))
    line++;
  return line;
}

function firstLineNotUtf8(bytes: Buffer): number {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let start = 0;
  for (let line = 1; start <= bytes.length; line++) {
    const end = bytes.indexOf(10, start);
    const slice = bytes.subarray(start, end === -1 ? bytes.length : end);
    try {
      decoder.decode(slice);
    } catch {
      return line;
    }
    if (end === -1) break;
    start = end + 1;
  }
  return 1;
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
  // Links are followed (a ConfigMap's files are links into ..data/); what an entry is (or leads to) is
  // checked when it is read, so a folder or a pipe named *.yaml is a problem, not skipped in silence.
  const names = (await readdir(path, { withFileTypes: true }))
    .filter((entry) => !entry.name.startsWith('.') && /\.ya?ml$/i.test(entry.name))
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

function checkAccounts(located: readonly LocatedStrategy[], accounts: readonly string[]): StrategyProblem[] {
  const known = accounts.join(', ');
  return located.flatMap(({ strategy, namePosition }) => {
    const where = { file: strategy.source.file, ...namePosition, key: 'account' };
    if (strategy.account === undefined) {
      return accounts.length > 1
        ? [{ ...where, message: `account: required: this deployment has several accounts (${known})` }]
        : accounts.includes(DEFAULT_ACCOUNT)
          ? []
          : [{ ...where, message: `account: required: name the deployment's account (${known})` }];
    }
    return accounts.includes(strategy.account)
      ? []
      : [
          {
            ...where,
            message: `account: unknown account "${strategy.account}" (the settings have ${known})`,
          },
        ];
  });
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
