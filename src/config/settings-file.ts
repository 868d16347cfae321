/**
 * Reads the YAML settings file and keeps its source positions, so that a bad value can be reported as
 * `file:line:col` long after parsing.
 */
import { readFileSync } from 'node:fs';
import { isNode, LineCounter, parseDocument } from 'yaml';
import { SettingsError } from './errors.js';

export interface SettingsFile {
  path: string;
  data: unknown;
  /** `file:line:col` of the deepest node along `path` that exists in the file, or the file alone. */
  locate(path: readonly PropertyKey[]): string;
}

/** Returns undefined when the file is absent and was not asked for explicitly. */
export function readSettingsFile(path: string, required: boolean): SettingsFile | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && !required) return undefined;
    const reason =
      code === 'ENOENT' ? 'file not found' : `cannot read file (${code ?? (error as Error).message})`;
    throw new SettingsError([{ where: path, key: '', message: reason }], { cause: error });
  }
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new SettingsError(
      doc.errors.map((error) => {
        const { line, col } = lineCounter.linePos(error.pos[0]);
        return { where: `${path}:${line}:${col}`, key: '', message: `YAML ${error.message.split('\n')[0]}` };
      }),
    );
  }

  return {
    path,
    data: doc.toJS() ?? {},
    locate(keyPath) {
      for (let length = keyPath.length; length >= 0; length--) {
        const node = length === 0 ? doc.contents : doc.getIn(keyPath.slice(0, length), true);
        if (isNode(node) && node.range) {
          const { line, col } = lineCounter.linePos(node.range[0]);
          return `${path}:${line}:${col}`;
        }
      }
      return path;
    },
  };
}
