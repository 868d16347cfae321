/**
 * The environment variables of the outside contract (DESIGN.md) and the setting each one overrides.
 * Env wins over the settings file. Values arrive as text and are converted by the kind given here, so
 * the schema reports a bad value as it would for the file, naming the variable instead of a line.
 */

type EnvKind = 'text' | 'integer' | 'flag';

export interface EnvBinding {
  name: string;
  /** Dotted settings key; `*File` keys are read by the loader and replaced by the secret they hold. */
  key: string;
  kind: EnvKind;
}

export const ENV_BINDINGS: readonly EnvBinding[] = [
  { name: 'TREASURY_API_URL', key: 'api.url', kind: 'text' },
  { name: 'TREASURY_API_TOKEN', key: 'api.token', kind: 'text' },
  { name: 'TREASURY_API_TOKEN_FILE', key: 'api.tokenFile', kind: 'text' },
  { name: 'TREASURY_API_FORMAT', key: 'api.format', kind: 'text' },
  { name: 'TREASURY_API_CONNECT_TIMEOUT_MS', key: 'api.timeouts.connectMs', kind: 'integer' },
  { name: 'TREASURY_API_HEADERS_TIMEOUT_MS', key: 'api.timeouts.headersMs', kind: 'integer' },
  { name: 'TREASURY_API_BODY_TIMEOUT_MS', key: 'api.timeouts.bodyMs', kind: 'integer' },
  { name: 'TREASURY_API_CONNECTIONS', key: 'api.connections', kind: 'integer' },
  { name: 'TREASURY_API_RATE_LIMIT', key: 'api.rateLimit', kind: 'integer' },
  { name: 'TREASURY_API_RETRY_MAX_ATTEMPTS', key: 'api.retry.maxAttempts', kind: 'integer' },
  { name: 'DATABASE_URL', key: 'database.url', kind: 'text' },
  { name: 'DATABASE_URL_FILE', key: 'database.urlFile', kind: 'text' },
  { name: 'TREASURY_DATA_DIR', key: 'database.dataDir', kind: 'text' },
  { name: 'TREASURY_DATABASE_CONNECTIONS', key: 'database.connections', kind: 'integer' },
  { name: 'TREASURY_STRATEGIES', key: 'strategies.path', kind: 'text' },
  { name: 'TREASURY_STRATEGY_CHANGES', key: 'strategies.changes', kind: 'text' },
  { name: 'TREASURY_OPS_ADDR', key: 'ops.addr', kind: 'text' },
  { name: 'TREASURY_TRUSTED_PROXIES', key: 'ops.trustedProxies', kind: 'text' },
  { name: 'TREASURY_WEBHOOK_ADDR', key: 'webhook.addr', kind: 'text' },
  { name: 'TREASURY_HTTP_PORT', key: 'http.port', kind: 'integer' },
  { name: 'TREASURY_WEBHOOK_SECRET', key: 'webhook.secret', kind: 'text' },
  { name: 'TREASURY_WEBHOOK_SECRET_FILE', key: 'webhook.secretFile', kind: 'text' },
  { name: 'TREASURY_WEBHOOK_PUBLIC_URL', key: 'webhook.publicUrl', kind: 'text' },
  { name: 'TREASURY_DRY_RUN', key: 'dryRun', kind: 'flag' },
  { name: 'TREASURY_TIMEZONE', key: 'reports.timezone', kind: 'text' },
  { name: 'LOG_LEVEL', key: 'log.level', kind: 'text' },
  { name: 'TREASURY_CONSOLE_URL', key: 'notifications.consoleUrl', kind: 'text' },
];

export const CONFIG_FILE_ENV = 'TREASURY_CONFIG';
export const DEFAULT_CONFIG_FILE = './config/default.yaml';

export type Environment = Readonly<Record<string, string | undefined>>;

export interface EnvOverride {
  binding: EnvBinding;
  value: unknown;
}

/** Set, non-empty variables of the table; an empty variable counts as unset, as shells often leave them. */
export function readEnvOverrides(env: Environment): EnvOverride[] {
  const overrides: EnvOverride[] = [];
  for (const binding of ENV_BINDINGS) {
    const text = env[binding.name];
    if (text === undefined || text.trim() === '') continue;
    overrides.push({ binding, value: convertEnvText(text.trim(), binding.kind) });
  }
  return overrides;
}

/** Unconvertible text is passed on unchanged so that validation rejects it with the variable's name. */
function convertEnvText(text: string, kind: EnvKind): unknown {
  if (kind === 'integer') return /^-?\d+$/.test(text) ? Number(text) : text;
  if (kind === 'flag') {
    if (['1', 'true', 'yes', 'on'].includes(text.toLowerCase())) return true;
    if (['0', 'false', 'no', 'off'].includes(text.toLowerCase())) return false;
  }
  return text;
}
