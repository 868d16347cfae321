import type { z } from 'zod';
import { checkAcrossKeys } from './cross-checks.js';
import { hintForUnknownKey } from './key-hints.js';
import { describeValue, type StrategyProblem } from './problems.js';
import {
  anyKindDocument,
  dcaDocument,
  KNOWN_KEYS,
  STRATEGY_KINDS,
  type StrategyDocument,
  targetDocument,
  thresholdDocument,
} from './strategy-schema.js';
import { toStrategy } from './to-strategy.js';
import type { Strategy } from './types.js';
import { type Position, readYamlDocuments, type SourceDocument } from './yaml-source.js';

/** A valid strategy with the position of its name (for reporting duplicates across files) and its text. */
export interface LocatedStrategy {
  strategy: Strategy;
  namePosition: Position;
  /** Its document as written (SourceDocument.text): what a strategy version records. */
  text: string;
}

export interface ParsedFile {
  strategies: LocatedStrategy[];
  problems: StrategyProblem[];
}

/** Parses and validates every document of one file's text; pure, so tests can feed text directly. */
export function parseStrategyText(text: string, file: string): ParsedFile {
  const strategies: LocatedStrategy[] = [];
  const problems: StrategyProblem[] = [];
  let documents = 0;
  for (const step of readYamlDocuments(text, file)) {
    problems.push(...step.problems);
    if (step.document === undefined) continue;
    documents++;
    const result = validateDocument(step.document, file);
    if (Array.isArray(result)) problems.push(...result);
    else strategies.push(result);
  }
  if (documents === 0 && problems.length === 0) {
    problems.push({ file, line: 1, col: 1, key: '', message: 'the file holds no strategy' });
  }
  return { strategies, problems };
}

function validateDocument(document: SourceDocument, file: string): LocatedStrategy | StrategyProblem[] {
  const { value } = document;
  const problem = (path: readonly PropertyKey[], message: string, target: 'key' | 'value' = 'value') => {
    const key = path.map(String).join('.');
    return { file, ...document.locate(path, target), key, message: key ? `${key}: ${message}` : message };
  };
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return [problem([], `expected a mapping of strategy keys (got ${describeValue(value)})`)];
  }
  const fields = value as Record<string, unknown>;
  const problems: StrategyProblem[] = [];
  const kind = fields.kind;
  const kinds = `${STRATEGY_KINDS.slice(0, -1)
    .map((name) => `"${name}"`)
    .join(', ')} or "${STRATEGY_KINDS.at(-1)}"`;
  let schema: z.ZodType = anyKindDocument;
  if (kind === 'dca') schema = dcaDocument;
  else if (kind === 'threshold') schema = thresholdDocument;
  else if (kind === 'target') schema = targetDocument;
  else if (kind === undefined) problems.push(problem(['kind'], `is required (${kinds})`));
  else problems.push(problem(['kind'], `expected ${kinds} (got ${describeValue(kind)})`));

  const parsed = schema.safeParse(fields, { error: messageForIssue });
  for (const issue of parsed.error?.issues ?? []) {
    if (issue.code === 'unrecognized_keys') {
      const known = knownKeysAt(issue.path, kind);
      for (const key of issue.keys) {
        const hint = hintForUnknownKey(key, known);
        problems.push(problem([...issue.path, key], `unknown key${hint ? ` (${hint})` : ''}`, 'key'));
      }
    } else {
      problems.push(problem(issue.path, issue.message));
    }
  }
  for (const issue of checkAcrossKeys(fields)) problems.push(problem(issue.path, issue.message));

  if (problems.length > 0 || !parsed.success) return problems;
  return {
    strategy: toStrategy(parsed.data as StrategyDocument, { file, line: document.start.line }),
    namePosition: document.locate(['name'], 'value'),
    text: document.text,
  };
}

const BLOCK_KEYS: Record<string, readonly string[]> = {
  budget: KNOWN_KEYS.budget,
  guards: KNOWN_KEYS.guards,
  approval: KNOWN_KEYS.approval,
  target: KNOWN_KEYS.targetTotal,
  window: KNOWN_KEYS.window,
  slice: KNOWN_KEYS.slice,
  opportunistic: KNOWN_KEYS.opportunistic,
};

function knownKeysAt(path: readonly PropertyKey[], kind: unknown): readonly string[] {
  const block = path.length > 0 ? BLOCK_KEYS[String(path[0])] : undefined;
  if (block) return block;
  if (kind === 'threshold') return KNOWN_KEYS.threshold;
  return kind === 'target' ? KNOWN_KEYS.target : KNOWN_KEYS.dca;
}

/** Messages for zod's own issues (the custom ones carry their message already). */
function messageForIssue(issue: z.core.$ZodRawIssue): string | undefined {
  if (issue.code === 'invalid_type') {
    if (issue.input === undefined) return 'is required';
    const expected = EXPECTED_WORDS[issue.expected] ?? issue.expected;
    return `expected ${expected} (got ${describeValue(issue.input)})`;
  }
  if (issue.code === 'invalid_value') {
    const values = issue.values.map((allowed) => JSON.stringify(allowed)).join(' or ');
    return `expected ${values} (got ${describeValue(issue.input)})`;
  }
  return undefined;
}

const EXPECTED_WORDS: Record<string, string> = {
  boolean: 'true or false',
  string: 'text',
  object: 'a mapping',
};
