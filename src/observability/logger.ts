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
    formatters: { level: (label) => ({ level: label }) },
    serializers: { err: pino.stdSerializers.errWithCause, error: pino.stdSerializers.errWithCause },
    redact: {
      paths: ['token', '*.token', 'authorization', '*.authorization', 'headers.authorization'],
      censor: REDACTED,
    },
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
