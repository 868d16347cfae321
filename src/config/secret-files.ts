/**
 * Secrets may be given directly (`api.token`, TREASURY_API_TOKEN) or as a file holding them
 * (`api.tokenFile`, TREASURY_API_TOKEN_FILE), which keeps them out of the environment of child processes
 * and out of `ps`. Env wins over the settings file; within one source, giving both forms is an error.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { SettingsProblem } from './errors.js';
import { isPlainObject, type PlainObject } from './tree.js';

const SECRET_PAIRS = [
  { section: 'api', value: 'token', file: 'tokenFile' },
  { section: 'webhook', value: 'secret', file: 'secretFile' },
  // The connection string carries the database password.
  { section: 'database', value: 'url', file: 'urlFile' },
] as const;

interface Context {
  cwd: string;
  envOrigins: Map<string, string>;
  describe(key: string): string;
}

/** Replaces each `*File` setting by the secret it names; returns the problems met. */
export function resolveSecretFiles(tree: PlainObject, context: Context): SettingsProblem[] {
  const problems: SettingsProblem[] = [];
  for (const pair of SECRET_PAIRS) {
    const section = tree[pair.section];
    if (!isPlainObject(section)) continue;
    const valueKey = `${pair.section}.${pair.value}`;
    const fileKey = `${pair.section}.${pair.file}`;
    const valueEnv = context.envOrigins.get(valueKey);
    const fileEnv = context.envOrigins.get(fileKey);
    if (valueEnv && fileEnv) {
      problems.push({ where: 'env', key: valueKey, message: `set only one of ${valueEnv} and ${fileEnv}` });
      continue;
    }
    if (valueEnv) delete section[pair.file];
    else if (fileEnv) delete section[pair.value];
    else if (section[pair.value] !== undefined && section[pair.file] !== undefined) {
      problems.push({
        where: context.describe(fileKey),
        key: fileKey,
        message: `set only one of ${valueKey} and ${fileKey}`,
      });
      continue;
    }
    if (section[pair.file] === undefined) continue;
    const problem = readSecretFile(section, pair, context.cwd);
    if (problem) problems.push({ where: context.describe(fileKey), key: fileKey, message: problem });
    // A refused secret read from a file is reported against the setting that named the file.
    else if (fileEnv) context.envOrigins.set(valueKey, fileEnv);
  }
  return problems;
}

function readSecretFile(
  section: PlainObject,
  pair: (typeof SECRET_PAIRS)[number],
  cwd: string,
): string | undefined {
  const named = section[pair.file];
  delete section[pair.file];
  if (typeof named !== 'string' || named.trim() === '') return 'expected the path of a file';
  const path = resolve(cwd, named);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'read error';
    return `cannot read ${JSON.stringify(path)} (${code})`;
  }
  const secret = text.trim();
  if (secret === '') return `file ${JSON.stringify(path)} is empty`;
  section[pair.value] = secret;
  return undefined;
}
