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
  for (const document of composer.compose(parser.parse(text))) {
    const problems: StrategyProblem[] = document.errors.map((error) => {
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
    if (document.errors.length > 0 || root === null || (isScalar(root) && root.value === null)) {
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
    yield { document: { value: document.toJS({ maxAliasCount: 100 }), start, locate }, problems };
  }
}

/** yaml's message without its position suffix and code frame, which our own prefix replaces. */
function describeYamlError(error: YAMLError, text: string): string {
  if (error.code === 'DUPLICATE_KEY')
    return `the key "${keyAt(text, error.pos[0])}" appears twice in one mapping`;
  return error.message.replace(/ at line \d+, column \d+:[\s\S]*$/, '');
}

function keyAt(text: string, offset: number): string {
  return /^[^:\n]*/.exec(text.slice(offset))![0].trim();
}
