/**
 * The worker's settings, validated once at start, with every default here (config/default.yaml repeats
 * them for operators). Objects are strict: a misspelt key is an error, not a silently ignored setting.
 * Secrets (`api.token`, `webhook.secret`) arrive resolved: their `*File` forms are read by the loader.
 */
import { z } from 'zod';
import { engineSchema } from './engine-schema.js';
import { trackingSettingsSchema } from './tracking-schema.js';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const httpUrl = z.url({ protocol: /^https?$/, error: 'expected an http(s) URL' });
/** `host:port` (IPv6 in brackets, `[::1]:9464`); port 0 picks a free one. */
const listenAddress = z
  .string()
  .regex(/^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/, {
    error: 'expected host:port, such as 127.0.0.1:9464 or [::1]:9464',
  })
  .refine((text) => Number(text.slice(text.lastIndexOf(':') + 1)) <= 65_535, {
    error: 'the port must be 0 to 65535',
  });
const positiveMs = z.number().int().positive();

const apiSchema = z.strictObject({
  /** Unset: commands start the built-in sandbox in-process (demo mode). */
  url: httpUrl.optional(),
  token: z.string().min(1).optional(),
  format: z.enum(['json', 'msgpack']).default('json'),
  timeouts: z
    .strictObject({
      connectMs: positiveMs.default(2_000),
      headersMs: positiveMs.default(5_000),
      bodyMs: positiveMs.default(5_000),
    })
    .prefault({}),
  connections: z.number().int().min(1).max(256).default(8),
  /** Requests per second this replica sends to the service at most; unset: no pace of its own. */
  rateLimit: z.number().int().positive().max(100_000).optional(),
  keepAliveMs: positiveMs.default(10_000),
  retry: z
    .strictObject({
      maxAttempts: z.number().int().min(1).max(10).default(3),
      baseDelayMs: z.number().int().nonnegative().default(100),
      maxDelayMs: z.number().int().nonnegative().default(2_000),
    })
    .prefault({}),
});

export const settingsSchema = z.strictObject({
  api: apiSchema.prefault({}),
  database: z
    .strictObject({
      /** Unset: embedded PGlite under `dataDir`. */
      url: z
        .string()
        .regex(/^postgres(ql)?:\/\//, { message: 'expected a postgres:// or postgresql:// URL' })
        .optional(),
      dataDir: z.string().min(1).default('./data'),
    })
    .prefault({}),
  strategies: z.strictObject({ path: z.string().min(1).default('./strategies') }).prefault({}),
  /** The operations listener: /metrics, /healthz, /readyz. Unset: 127.0.0.1:9464 (not public). */
  ops: z.strictObject({ addr: listenAddress.optional() }).prefault({}),
  /**
   * Deprecated (one release): the single listener of the first release on 0.0.0.0, serving the operations
   * routes and the webhook receiver together. Used only while neither ops.addr nor webhook.addr is set.
   */
  http: z.strictObject({ port: z.number().int().min(0).max(65_535).optional() }).prefault({}),
  webhook: z
    .strictObject({
      /** The receiver's own listener, started only with a secret. Unset: 0.0.0.0:8080. */
      addr: listenAddress.optional(),
      /** Unset: the receiver is off. */
      secret: z.string().min(16, { message: 'must be at least 16 characters' }).optional(),
      /** Unset: `run` does not register the receiver with the service. */
      publicUrl: httpUrl.optional(),
    })
    .prefault({}),
  dryRun: z.boolean().default(false),
  log: z.strictObject({ level: z.enum(LOG_LEVELS).default('info') }).prefault({}),
  // Sections owned by the worker helpers (scheduling, cycle and settlement tracking): add their settings
  // with defaults here; they are empty objects until then.
  engine: engineSchema.prefault({}),
  tracking: trackingSettingsSchema.prefault({}),
});

export type Settings = z.output<typeof settingsSchema> & {
  /** Absolute path of the settings file that was read, or undefined when none was. */
  configFile: string | undefined;
};

/** Keys whose values are never echoed in an error message. */
export const SECRET_KEYS: ReadonlySet<string> = new Set(['api.token', 'webhook.secret', 'database.url']);
