/**
 * Settings = schema defaults, overridden by the YAML file named by TREASURY_CONFIG, overridden by env.
 * Every problem is collected and reported at once, each named by where it came from.
 */

import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { isNode, LineCounter, parseDocument } from 'yaml';
import type { z } from 'zod';
import { CONFIG_FILE_ENV, DEFAULT_CONFIG_FILE, type Environment, readEnvOverrides } from './env.js';
import { CHANNEL_SECRET_FIELDS, isChannelSecretKey } from './notifications-schema.js';
import { gatherAccounts, SECRET_KEYS, type Settings, settingsSchema } from './schema.js';

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
  const problems: SettingsProblem[] = [
    ...mixedAccountForms(tree, describe),
    ...resolveSecretFiles(tree, { cwd, envOrigins, describe }),
    ...resolveChannelSecrets(tree, { cwd, env, describe }),
  ];
  const parsed = settingsSchema.safeParse(tree);
  // A secret whose file or variable could not be read is reported once (against its `*File` setting when it
  // has one), not again as an invalid value.
  const reported = new Set(problems.map((problem) => problem.key));
  if (!parsed.success)
    problems.push(
      ...parsed.error.issues
        .flatMap((issue) => toProblems(issue, tree, describe))
        .filter((problem) => !reported.has(problem.key) && !reported.has(`${problem.key}File`)),
    );
  if (problems.length > 0 || !parsed.success) throw new SettingsError(problems);

  const settings = gatherAccounts(parsed.data);
  settings.database.dataDir = resolveFrom(cwd, settings.database.dataDir);
  settings.strategies.path = resolveFrom(cwd, settings.strategies.path);
  return { ...settings, configFile: file?.path };
}

/**
 * `accounts:` and the single-account forms (`api:`, `webhook.secret`, or their variables) do not mix: the
 * single form IS the account `default`, so both at once would leave one of them silently unused.
 */
function mixedAccountForms(tree: PlainObject, describe: (key: string) => string): SettingsProblem[] {
  if (tree.accounts === undefined) return [];
  const single = [
    ...Object.keys(isPlainObject(tree.api) ? tree.api : {}).map((key) => `api.${key}`),
    ...['secret', 'secretFile']
      .filter((key) => isPlainObject(tree.webhook) && tree.webhook[key] !== undefined)
      .map((key) => `webhook.${key}`),
  ];
  return single.map((key) => ({
    where: describe(key),
    key,
    message:
      'cannot be set together with accounts: (the single api: block is the account named default); move it into that account, e.g. accounts: [{ name: default, api: { url: … } }]',
  }));
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
    else if (Array.isArray(value)) for (const item of value) if (isPlainObject(item)) withoutNulls(item);
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
  const secret = SECRET_KEYS.has(key.replace(/^accounts\.\d+\./, '')) || isChannelSecretKey(path);
  const shown = secret || value === undefined ? '' : ` (got ${JSON.stringify(value)})`;
  return [{ where: describe(key), key, message: `${issue.message}${shown}` }];
}

function resolveFrom(cwd: string, path: string): string {
  return isAbsolute(path) ? path : resolve(cwd, path);
}

/**
 * Reads the YAML settings file and keeps its source positions, so that a bad value can be reported as
 * `file:line:col` long after parsing.
 */
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

/** Small accessors for the raw settings tree (parsed YAML plus env), addressed by key paths. */
export type PlainObject = Record<string, unknown>;

export function isPlainObject(value: unknown): value is PlainObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function valueAt(tree: PlainObject, path: readonly string[]): unknown {
  let node: unknown = tree;
  for (const key of path) {
    // Lists are walked by index (`accounts.0.api`), as the settings' error paths name them.
    if (typeof node !== 'object' || node === null) return undefined;
    node = (node as PlainObject)[key];
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

/** One thing wrong with the settings, located where an operator can fix it. */
export interface SettingsProblem {
  /** `path/to/file.yaml:12:5`, `env TREASURY_HTTP_PORT`, or the file alone when no position is known. */
  where: string;
  /** Dotted settings key, e.g. `api.timeouts.connectMs`. */
  key: string;
  message: string;
}

/**
 * Settings that cannot be used. The message lists every problem, one per line, and never a secret's value
 * (the loader leaves the value out for secret keys).
 */
export class SettingsError extends Error {
  override readonly name = 'SettingsError';
  readonly code = 'SETTINGS_INVALID';

  constructor(
    readonly problems: readonly SettingsProblem[],
    options?: { cause?: unknown },
  ) {
    super(
      problems.length === 1
        ? `invalid settings: ${formatProblem(problems[0]!)}`
        : `invalid settings:\n${problems.map((problem) => `  ${formatProblem(problem)}`).join('\n')}`,
      options,
    );
  }
}

export function formatProblem(problem: SettingsProblem): string {
  return problem.key
    ? `${problem.where}: ${problem.key}: ${problem.message}`
    : `${problem.where}: ${problem.message}`;
}

/**
 * Secrets may be given directly (`api.token`, TREASURY_API_TOKEN) or as a file holding them
 * (`api.tokenFile`, TREASURY_API_TOKEN_FILE), which keeps them out of the environment of child processes
 * and out of `ps`. Env wins over the settings file; within one source, giving both forms is an error.
 * The OpenID client secret has the file form only (`fileOnly`): it has no variable, and a settings file is
 * often shared where a secret file is not.
 */
const SECRET_PAIRS: readonly { section: string; value: string; file: string; fileOnly?: true }[] = [
  { section: 'api', value: 'token', file: 'tokenFile' },
  { section: 'webhook', value: 'secret', file: 'secretFile' },
  // The connection string carries the database password.
  { section: 'database', value: 'url', file: 'urlFile' },
  { section: 'console.oidc', value: 'clientSecret', file: 'clientSecretFile', fileOnly: true },
];

const ACCOUNT_SECRET_PAIRS = SECRET_PAIRS.filter(
  (pair) => pair.section === 'api' || pair.section === 'webhook',
);

interface Context {
  cwd: string;
  envOrigins: Map<string, string>;
  describe(key: string): string;
}

/** Replaces each `*File` setting by the secret it names; returns the problems met. */
export function resolveSecretFiles(tree: PlainObject, context: Context): SettingsProblem[] {
  const problems: SettingsProblem[] = [];
  // Each account's token and webhook secret have the same two forms as the single account's.
  const accounts = Array.isArray(tree.accounts) ? tree.accounts : [];
  const pairs = [
    ...SECRET_PAIRS,
    ...accounts.flatMap((_, index) =>
      ACCOUNT_SECRET_PAIRS.map((pair) => ({ ...pair, section: `accounts.${index}.${pair.section}` })),
    ),
  ];
  for (const pair of pairs) {
    const section = valueAt(tree, pair.section.split('.'));
    if (!isPlainObject(section)) continue;
    const valueKey = `${pair.section}.${pair.value}`;
    const fileKey = `${pair.section}.${pair.file}`;
    if (pair.fileOnly) {
      if (section[pair.value] !== undefined) {
        problems.push({
          where: context.describe(valueKey),
          key: valueKey,
          message: `write the secret in a file and name the file in ${fileKey}`,
        });
        continue;
      }
      if (section[pair.file] === undefined) {
        problems.push({
          where: context.describe(pair.section),
          key: fileKey,
          message: 'expected the path of the file holding the client secret',
        });
        continue;
      }
    }
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

/**
 * Channel secrets (notifications.channels.<name>.webhookUrl | secret | smtp) may be written inline, or as
 * `{ file: /run/secrets/x }` (a mounted secret: kept out of the environment and `ps`) or `{ env: NAME }`
 * (a variable of the worker's environment). They are replaced by the text they name before validation; a
 * missing file or variable is reported at the line that names it, never with the secret itself.
 */
interface ChannelSecretContext {
  cwd: string;
  env: Environment;
  describe(key: string): string;
}

export function resolveChannelSecrets(tree: PlainObject, context: ChannelSecretContext): SettingsProblem[] {
  const notifications = tree.notifications;
  if (!isPlainObject(notifications) || !isPlainObject(notifications.channels)) return [];
  const problems: SettingsProblem[] = [];
  for (const [name, channel] of Object.entries(notifications.channels)) {
    if (!isPlainObject(channel)) continue;
    for (const field of Object.values(CHANNEL_SECRET_FIELDS)) {
      const reference = channel[field];
      if (!isPlainObject(reference)) continue;
      const key = `notifications.channels.${name}.${field}`;
      const resolved = readReference(reference, context);
      if ('problem' in resolved)
        problems.push({ where: context.describe(key), key, message: resolved.problem });
      else channel[field] = resolved.secret;
    }
  }
  return problems;
}

function readReference(
  reference: PlainObject,
  { cwd, env }: ChannelSecretContext,
): { secret: string } | { problem: string } {
  const keys = Object.keys(reference);
  if (keys.length !== 1 || !['file', 'env'].includes(keys[0]!) || typeof reference[keys[0]!] !== 'string')
    return { problem: 'expected the secret as text, { file: PATH } or { env: NAME }' };
  if (typeof reference.env === 'string') {
    const value = env[reference.env]?.trim();
    return value ? { secret: value } : { problem: `environment variable ${reference.env} is unset or empty` };
  }
  const path = resolve(cwd, String(reference.file));
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'read error';
    return { problem: `cannot read ${JSON.stringify(path)} (${code})` };
  }
  const secret = text.trim();
  return secret === '' ? { problem: `file ${JSON.stringify(path)} is empty` } : { secret };
}
