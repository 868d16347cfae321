import { createRequire } from 'node:module';
import type Pino from 'pino';
import type { Logger, LoggerOptions } from 'pino';
import type PinoPretty from 'pino-pretty';

export type { Logger };

export interface LoggerSettings {
  level?: string;
  /** Human-readable output; by default only when stdout is a terminal. */
  pretty?: boolean;
  /** Values that must never reach a log line (API token, webhook secret). */
  secrets?: readonly (string | undefined)[];
  /** Where lines go; defaults to stdout (fd 1). Tests pass a stream to capture lines. */
  destination?: Pino.DestinationStream;
  name?: string;
}

const REDACTED = '[REDACTED]';

const requirePackage = createRequire(import.meta.url);

/**
 * Builds the process logger. Secrets are scrubbed from the final serialized line, not from known paths:
 * a token can hide in a URL, an error message or an error's cause, and a path-based redaction would miss
 * those. Secrets shorter than 4 characters are ignored because scrubbing them would mangle ordinary text.
 */
export function createLogger(settings: LoggerSettings = {}): Logger {
  // Required here, not imported: every command line loads this module for scrubSecrets, and most commands
  // (`export orders` among them) never log, so they need not pay pino's ~8 MB of RSS.
  const pino = requirePackage('pino') as typeof Pino;
  const secrets = (settings.secrets ?? []).filter((s): s is string => typeof s === 'string' && s.length >= 4);
  const options: LoggerOptions = {
    level: settings.level ?? process.env.LOG_LEVEL ?? 'info',
    base: settings.name ? { name: settings.name } : {},
    timestamp: pino.stdTimeFunctions.isoTime,
    serializers: { err: pino.stdSerializers.errWithCause, error: pino.stdSerializers.errWithCause },
    formatters: { level: (label) => ({ level: label }), log: (line) => censorCredentialFields(line) },
    hooks: secrets.length > 0 ? { streamWrite: (line) => scrubSecrets(line, secrets) } : {},
  };
  const pretty = settings.pretty ?? (settings.destination === undefined && process.stdout.isTTY === true);
  if (pretty) {
    // pino-pretty runs in-process here (not as a worker transport) so that the streamWrite scrub still
    // applies before anything is printed. Loaded only for a terminal: a deployed worker never pays its
    // ~10 MB of RSS.
    const pinoPretty = requirePackage('pino-pretty') as typeof PinoPretty;
    const prettyStream = pinoPretty({
      colorize: settings.destination === undefined,
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname',
      destination: settings.destination,
    });
    return pino(options, prettyStream);
  }
  return pino(options, settings.destination ?? pino.destination({ fd: 1, sync: false }));
}

/** Names of fields whose value is a credential, whatever it is. */
const CREDENTIAL_FIELDS = new Set(['token', 'authorization']);

/**
 * Fields named like a credential, at the top of a line or one level down (`headers.authorization`), are
 * censored; the caller's objects are copied, never changed. pino's own path redaction did the same at a cost
 * every line paid: it parsed its paths and copied every object-valued field of each line (16 KB of a burst
 * cycle's 220, bench/README.md "ninth session"). This copies only a line that holds such a field. An
 * error goes through its serializer after this: its message and cause are covered by the scrub of the line.
 */
function censorCredentialFields(line: Record<string, unknown>, depth = 0): Record<string, unknown> {
  let censored: Record<string, unknown> | undefined;
  for (const key in line) {
    if (!Object.hasOwn(line, key)) continue;
    const value = line[key];
    const replacement = CREDENTIAL_FIELDS.has(key)
      ? REDACTED
      : depth === 0 && isPlainRecord(value)
        ? censorCredentialFields(value, 1)
        : value;
    if (replacement !== value) {
      censored ??= { ...line };
      censored[key] = replacement;
    }
  }
  return censored ?? line;
}

/** An object of fields (not an array, a Date, a Decimal or an Error, which serialize as themselves). */
function isPlainRecord(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

export function scrubSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (out.includes(secret)) out = out.split(secret).join(REDACTED);
    // Secrets also travel URL-encoded (webhook paths) and JSON-escaped inside serialized lines.
    const encoded = encodeURIComponent(secret);
    if (encoded !== secret && out.includes(encoded)) out = out.split(encoded).join(REDACTED);
    const escaped = JSON.stringify(secret).slice(1, -1);
    if (escaped !== secret && out.includes(escaped)) out = out.split(escaped).join(REDACTED);
  }
  return out;
}
