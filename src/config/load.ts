/**
 * Settings = schema defaults, overridden by the YAML file named by TREASURY_CONFIG, overridden by env.
 * Every problem is collected and reported at once, each named by where it came from.
 */
import { isAbsolute, resolve } from 'node:path';
import type { z } from 'zod';
import { CONFIG_FILE_ENV, DEFAULT_CONFIG_FILE, type Environment, readEnvOverrides } from './env.js';
import { SettingsError, type SettingsProblem } from './errors.js';
import { SECRET_KEYS, type Settings, settingsSchema } from './schema.js';
import { resolveSecretFiles } from './secret-files.js';
import { readSettingsFile, type SettingsFile } from './settings-file.js';
import { isPlainObject, type PlainObject, valueAt, writeAt } from './tree.js';

export interface LoadSettingsInput {
  env: Environment;
  /** Base of relative paths (the settings file, data dir, strategies, secret files); default process.cwd(). */
  cwd?: string;
}

export function loadSettings({ env, cwd = process.cwd() }: LoadSettingsInput): Settings {
  const explicitFile = env[CONFIG_FILE_ENV]?.trim() || undefined;
  const file = readSettingsFile(
    resolve(cwd, explicitFile ?? DEFAULT_CONFIG_FILE),
    explicitFile !== undefined,
  );
  const tree = startTree(file);
  /** Dotted key → env variable that set it, to name the variable when its value is refused. */
  const envOrigins = new Map<string, string>();
  for (const { binding, value } of readEnvOverrides(env)) {
    writeAt(tree, binding.key.split('.'), value);
    envOrigins.set(binding.key, binding.name);
  }

  const describe = (key: string) =>
    envOrigins.has(key) ? `env ${envOrigins.get(key)}` : (file?.locate(key.split('.')) ?? 'settings');
  const problems: SettingsProblem[] = resolveSecretFiles(tree, { cwd, envOrigins, describe });
  const parsed = settingsSchema.safeParse(tree);
  if (!parsed.success)
    problems.push(...parsed.error.issues.flatMap((issue) => toProblems(issue, tree, describe)));
  if (problems.length > 0 || !parsed.success) throw new SettingsError(problems);

  const settings = parsed.data;
  settings.database.dataDir = resolveFrom(cwd, settings.database.dataDir);
  settings.strategies.path = resolveFrom(cwd, settings.strategies.path);
  return { ...settings, configFile: file?.path };
}

function startTree(file: SettingsFile | undefined): PlainObject {
  if (file === undefined) return {};
  if (typeof file.data !== 'object' || file.data === null || Array.isArray(file.data)) {
    throw new SettingsError([{ where: file.locate([]), key: '', message: 'expected a mapping of settings' }]);
  }
  return withoutNulls(structuredClone(file.data) as PlainObject);
}

/** In YAML an empty value (`url:`, or a section whose lines are all commented out) is null: unset. */
function withoutNulls(tree: PlainObject): PlainObject {
  for (const [key, value] of Object.entries(tree)) {
    if (value === null) delete tree[key];
    else if (isPlainObject(value)) withoutNulls(value);
  }
  return tree;
}

function toProblems(
  issue: z.core.$ZodIssue,
  tree: PlainObject,
  describe: (key: string) => string,
): SettingsProblem[] {
  const path = issue.path.map(String);
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((name) => {
      const key = [...path, name].join('.');
      return { where: describe(key), key, message: 'unknown setting' };
    });
  }
  const key = path.join('.');
  const value = valueAt(tree, path);
  const shown = SECRET_KEYS.has(key) || value === undefined ? '' : ` (got ${JSON.stringify(value)})`;
  return [{ where: describe(key), key, message: `${issue.message}${shown}` }];
}

function resolveFrom(cwd: string, path: string): string {
  return isAbsolute(path) ? path : resolve(cwd, path);
}
