/** Small accessors for the raw settings tree (parsed YAML plus env), addressed by key paths. */
export type PlainObject = Record<string, unknown>;

export function isPlainObject(value: unknown): value is PlainObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function valueAt(tree: PlainObject, path: readonly string[]): unknown {
  let node: unknown = tree;
  for (const key of path) {
    if (!isPlainObject(node)) return undefined;
    node = node[key];
  }
  return node;
}

/**
 * Sets a value, creating missing sections. A section that exists but is not a mapping is left alone, so
 * that validation reports the file's mistake instead of an override silently replacing it.
 */
export function writeAt(tree: PlainObject, path: readonly string[], value: unknown): void {
  let node: PlainObject = tree;
  for (const key of path.slice(0, -1)) {
    const next = node[key];
    if (next === undefined) node[key] = {};
    else if (!isPlainObject(next)) return;
    node = node[key] as PlainObject;
  }
  node[path[path.length - 1]!] = value;
}
