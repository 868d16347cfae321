import { Composer, isMap, isPair, isScalar, LineCounter, type Node, Parser, type YAMLError } from 'yaml';
import type { StrategyProblem } from './problems.js';

/**
 * Reads the YAML documents of one file and keeps each one's syntax tree while it is validated, so that a
 * problem found later in the plain value can be pointed at the line and column of the key or value it is
 * about. Documents are composed one at a time: a file of 10,000 strategies never holds 10,000 syntax trees
 * at once (parsing them all first grew the heap by about 100 MB, which V8 then kept).
 */

export interface Position {
  line: number;
  col: number;
}

export interface SourceDocument {
  /** The document as plain data (mappings as objects). */
  value: unknown;
  /** Where the document's content starts. */
  start: Position;
  /**
   * The document as written, comments included, without its `---` separator: what a strategy version
   * stores and diffs. A slice of the file's text, so only for values that are not kept for long.
   */
  text: string;
  /**
   * Where the key path points: at the key itself for `'key'` (unknown keys), at its value for `'value'`.
   * A path that goes past what the document holds (a missing key) points at the deepest mapping found.
   */
  locate(path: readonly PropertyKey[], target: 'key' | 'value'): Position;
}

/** One document of a file: its syntax problems, and the document itself when it has none and is not empty. */
export interface YamlReadStep {
  document?: SourceDocument;
  problems: StrategyProblem[];
}

/** Documents that are empty (a trailing `---`, only comments) are left out; a file of none yields none. */
export function* readYamlDocuments(text: string, file: string): Generator<YamlReadStep> {
  const lineCounter = new LineCounter();
  const parser = new Parser(lineCounter.addNewLine);
  const composer = new Composer({ uniqueKeys: true });
  let previousEnd = 0;
  for (const document of composer.compose(parser.parse(text))) {
    // A document's range leaves out the comments above its first key; from the end of the one before, it
    // holds them (and the separator, cut off in documentText).
    const own = documentText(text.slice(previousEnd, document.range[2]));
    previousEnd = document.range[2];
    // Nesting deep enough to exhaust the stack fails at several depths: one report of it is enough.
    const errors = document.errors.filter(
      (error, index, all) => !isTooDeep(error) || all.findIndex(isTooDeep) === index,
    );
    const problems: StrategyProblem[] = errors.map((error) => {
      const key = error.code === 'DUPLICATE_KEY' ? keyAt(text, error.pos[0]) : '';
      const at = lineCounter.linePos(error.pos[0]);
      return {
        file,
        line: at.line,
        col: at.col,
        key,
        message: `${key ? `${key}: ` : ''}YAML syntax error: ${describeYamlError(error, text)}`,
      };
    });
    const root = document.contents;
    // A document with syntax errors is not validated further: its tree may not be what the author meant.
    if (errors.length > 0 || root === null || (isScalar(root) && root.value === null)) {
      yield { problems };
      continue;
    }
    const positionOf = (node: Node | null | undefined, fallback: Position): Position =>
      node?.range ? lineCounter.linePos(node.range[0]) : fallback;
    const start = positionOf(root, { line: 1, col: 1 });
    const locate = (path: readonly PropertyKey[], target: 'key' | 'value'): Position => {
      let node: Node = root;
      let position = start;
      for (const key of path) {
        if (!isMap(node)) break;
        const pair = node.items.find((item) => isPair(item) && isScalar(item.key) && item.key.value === key);
        if (!pair) break;
        const keyPosition = positionOf(pair.key as Node, position);
        const valueNode = pair.value as Node | null;
        position = target === 'key' || !valueNode?.range ? keyPosition : positionOf(valueNode, keyPosition);
        if (!valueNode) break;
        node = valueNode;
      }
      return position;
    };
    let value: unknown;
    try {
      value = document.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
    } catch (error) {
      // yaml throws (a ReferenceError) when aliases would expand past the limit: an alias bomb, or a file
      // that leans on aliases far more than a strategy needs.
      yield { problems: [{ file, ...start, key: '', message: `YAML aliases: ${aliasProblem(error)}` }] };
      continue;
    }
    yield { document: { value, start, text: own, locate }, problems };
  }
}

/** The text without the `---` line that opens it, blank lines around it, and with one final newline. */
function documentText(text: string): string {
  const body = text.replace(/^(?:[ \t]*\r?\n)*---[^\n]*(?:\n|$)/, '');
  return `${body.replace(/^(?:[ \t]*\r?\n)+/, '').trimEnd()}\n`;
}

/** How many nodes one alias may stand for; a strategy repeats a few keys at most. */
const MAX_ALIAS_COUNT = 100;

function aliasProblem(error: unknown): string {
  if (error instanceof ReferenceError && /alias/i.test(error.message)) {
    return `the aliases expand to too many nodes (more than ${MAX_ALIAS_COUNT} per alias), as an alias bomb does`;
  }
  return (error as Error).message;
}

/** yaml's message without its position suffix and code frame, which our own prefix replaces. */
function describeYamlError(error: YAMLError, text: string): string {
  if (error.code === 'DUPLICATE_KEY')
    return `the key "${keyAt(text, error.pos[0])}" appears twice in one mapping`;
  if (isTooDeep(error)) return 'nested too deeply to be a strategy';
  return error.message.replace(/ at line \d+, column \d+:[\s\S]*$/, '');
}

/** yaml reports its own stack overflow on absurdly nested input as an error like any other. */
function isTooDeep(error: YAMLError): boolean {
  return /Maximum call stack/.test(error.message);
}

function keyAt(text: string, offset: number): string {
  return /^[^:\n]*/.exec(text.slice(offset))![0].trim();
}
