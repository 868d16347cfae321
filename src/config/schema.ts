/**
 * The worker's settings, validated once at start, with every default here (config/default.yaml repeats
 * them for operators). Objects are strict: a misspelt key is an error, not a silently ignored setting.
 * Secrets (`api.token`, `webhook.secret`) arrive resolved: their `*File` forms are read by the loader.
 */
import { isIP } from 'node:net';
import { z } from 'zod';
import { Decimal } from '../money.js';
import { ACCOUNT_NAME, DEFAULT_ACCOUNT, DEFAULT_QUOTE_TOLERANCES } from '../strategy/index.js';
import { notificationsSchema } from './notifications-schema.js';

const ms = z.number().int().nonnegative();
const positiveMs = z.number().int().positive();

/**
 * How far a quote's figures may stray before the worker refuses it (`engine.quoteChecks`): the
 * tolerances the pure quote-sanity rule takes as an argument. The defaults are the rule's own, so a worker
 * without settings decides as the rule's tests describe. Values are decimal text like all money here: a
 * YAML number such as 0.1 has already become a binary approximation by the time it is read.
 */
const nonNegativeDecimal = z
  .string({ error: 'expected decimal text in quotes, such as "0.5"' })
  .regex(/^\d+(\.\d+)?$/, { error: 'expected decimal text of zero or more, such as "0.5"' })
  .transform((text) => new Decimal(text));

export const quoteChecksSchema = z.strictObject({
  /** |totalCost − price × totalFilled| may be up to this percent of totalCost ... */
  costMismatchPct: nonNegativeDecimal.default(DEFAULT_QUOTE_TOLERANCES.costMismatchPct),
  /** ... or up to this fiat amount, whichever is larger (the service rounds totalCost to cents). */
  costMismatchAbsolute: nonNegativeDecimal.default(DEFAULT_QUOTE_TOLERANCES.costMismatchAbsolute),
  /** totalCost may exceed the strategy's amount by at most this percent: the service's fees. */
  feeAllowancePct: nonNegativeDecimal.default(DEFAULT_QUOTE_TOLERANCES.feeAllowancePct),
});

/**
 * Settings of the worker engine (`engine:` in the settings file): scheduling, the buy cycle's deadlines,
 * crash recovery and reconciliation. Defaults live here; config/default.yaml shows them to operators.
 */
export const engineSchema = z.strictObject({
  /**
   * Most cycles in flight at once per replica (lower under api.rateLimit, see engine/concurrency.ts); quotes
   * and orders travel on a pool of this many connections of their own. A cap, not a width: the adaptive bound
   * below it starts at 8. 128 because a cycle waits on two round trips to the service: at 64, three replicas
   * placed 10,000 due orders through a service answering in 80 ms no faster than 64 per replica allowed
   * (13.5-13.9 s); 128 placed them in 10.5 s on less CPU, 256 in 11.4 s on more (bench/README.md, "ninth
   * session").
   */
  concurrency: z.number().int().min(1).max(1_024).default(128),
  /** How long a quote lives at the service (the reference says 5 seconds). */
  quoteWindowMs: positiveMs.default(5_000),
  /** The worker stops using a quote this long before its window closes (clock skew, network). */
  deadlineMarginMs: ms.default(1_000),
  /**
   * A quote is acted on only while at least this much of its usable window is left for the intent's commit
   * (the order's own travel is in the margin above): a commit started later is given up before it is written.
   */
  intentReserveMs: ms.default(250),
  /** Fresh quotes a slot may take after an expired or late one. */
  maxFreshQuotes: z.number().int().min(0).max(10).default(2),
  /** Wait for the answer to an order request; after it the outcome is unknown (never re-sent). */
  orderTimeoutMs: positiveMs.default(10_000),
  /** Wait for GET /client/balance when a strategy's guards need it. */
  balanceTimeoutMs: positiveMs.default(3_000),
  /** The kill switch is re-read from the database at most this long after the last read. */
  killSwitchCacheMs: z.number().int().min(0).max(1_000).default(1_000),
  /** Slots node-cron did not fire (DST gaps, a blocked event loop) are caught up this often. */
  catchUpIntervalMs: positiveMs.default(15_000),
  /** ...for slots at least this old, so the sweep never races node-cron's own tick. */
  catchUpLagMs: ms.default(2_000),
  /** `run` waits this long for an unreachable database at start (a deploy, a failover) before giving up. */
  startupDatabaseWaitMs: ms.default(60_000),
  /** The engine, and tracking, give up on a database statement after this (the driver may wait forever). */
  databaseTimeoutMs: positiveMs.default(10_000),
  /**
   * The database's clock judges approval deadlines and envelope windows; a replica whose own clock differs
   * from it by more than this says so in /readyz (not ready), treasury_database_clock_skew_seconds and the
   * TreasuryClockSkew alert.
   */
  databaseClockSkewMs: positiveMs.default(2_000),
  /** Graceful stop waits this long for in-flight cycles. */
  drainTimeoutMs: positiveMs.default(30_000),
  recovery: z
    .strictObject({
      /** A cycle in `submitting` older than the order timeout plus this belongs to a dead process: unsure. */
      submittingMarginMs: positiveMs.default(30_000),
      /** A cycle in claimed/quoted older than this belongs to a dead process: failed (abandoned). */
      abandonAfterMs: positiveMs.default(120_000),
    })
    .prefault({}),
  reconcile: z
    .strictObject({
      /** Recovery, reconciliation of unsure cycles and the external-order scan run this often. */
      intervalMs: positiveMs.default(30_000),
      /**
       * How long an order may take to show in the service's order list, past its quote's window. Absence is
       * proven only after it, so it bounds how soon a lost replica's cycles settle; raise it for a service
       * slower to list new orders (a value too low could record as absent an order that shows later).
       */
      visibilityLagMs: ms.default(2_000),
      /** Allowed difference between our clock and the service's order timestamps. */
      clockSkewMs: ms.default(5_000),
      /** A replica holds an unsure cycle this long while matching it. */
      leaseMs: positiveMs.default(60_000),
      batchSize: z.number().int().min(1).max(1_000).default(50),
      /** The external-order scan looks this far back. */
      externalLookbackMs: positiveMs.default(24 * 3_600_000),
      /** Pages of 100 orders read per list call at most. */
      maxPages: z.number().int().min(1).max(1_000).default(20),
    })
    .prefault({}),
  approvals: z
    .strictObject({
      /**
       * A parked cycle waiting longer than this for people is counted in treasury_approvals_waiting_long
       * and logged (`alert: approval_waiting`) by the maintenance pass, which also expires and resumes them.
       */
      waitingAlertMs: positiveMs.default(15 * 60_000),
      /**
       * How often a running worker looks for what people approved: approved cycles to buy (one index probe;
       * the claim only when there is one) and, with strategies.changes `approve`, approved versions of the
       * waiting changes. The last approval leads to the order, or the version to running from the next
       * slot, within about this, not at the next pass or reload.
       */
      pollMs: positiveMs.default(500),
    })
    .prefault({}),
  targets: z
    .strictObject({
      /**
       * A target this share of its total behind its straight line, with less than a quarter of its window
       * left, is told once per window and version (`target_behind`). The TreasuryTargetBehind alert reads
       * the default (alert-rules.ts TARGET_BEHIND_SHARE): its rules file is written once, not per deployment.
       */
      behindShare: z.number().gt(0).lt(1).default(0.1),
    })
    .prefault({}),
  /** Tolerances of the quote-sanity rule, fees included (see quoteChecksSchema above). */
  quoteChecks: quoteChecksSchema.prefault({}),
  reload: z
    .strictObject({
      /** Watch the strategy files and apply valid changes without a restart. */
      watch: z.boolean().default(true),
      debounceMs: ms.default(300),
    })
    .prefault({}),
});

export type EngineSettings = z.output<typeof engineSchema>;

/**
 * Settings of settlement tracking (src/tracking/): the poller, the webhook receiver, the webhook-log
 * backfill and the balance snapshots. Durations are milliseconds; every default is here.
 */
const positiveCount = (max: number) => z.number().int().min(1).max(max);

const pollSchema = z.strictObject({
  /** false: no periodic polling; orders then move only through webhook nudges (and reconciliation). */
  enabled: z.boolean().default(true),
  /** How often the poller looks for orders due a check when the previous look found few. */
  intervalMs: positiveMs.default(1_000),
  /** Orders leased per look. */
  batchSize: positiveCount(500).default(20),
  /** Tracking requests in flight at once per replica and account. */
  concurrency: positiveCount(64).default(4),
  /** How long a replica owns the orders it leased; must outlast a batch. */
  leaseMs: positiveMs.default(60_000),
  /** Delay before the next check: time since the last progress × ageFactor, clamped to [min, max]. */
  minDelayMs: positiveMs.default(2_000),
  maxDelayMs: positiveMs.default(300_000),
  ageFactor: z.number().positive().max(10).default(0.25),
  /** Upper bound of tracking requests per second from this replica to each account, nudges included. */
  maxRequestsPerSecond: z.number().positive().max(1_000).default(5),
});

const receiverSchema = z.strictObject({
  /** Largest webhook body accepted; a larger one is answered 413. */
  bodyLimitBytes: z
    .number()
    .int()
    .min(1_024)
    .max(16 * 1024 * 1024)
    .default(256 * 1024),
  /** How often stored events still waiting for their order (or for processing) are looked at again. */
  sweepIntervalMs: positiveMs.default(10_000),
  /**
   * How long a stored event is retried (its order not recorded yet, or its check failing) before it is
   * left for review.
   */
  unknownOrderRetryMs: positiveMs.default(3_600_000),
});

const backfillSchema = z.strictObject({
  enabled: z.boolean().default(true),
  intervalMs: positiveMs.default(60_000),
  /** Most recent pages of GET /client/webhook/logs read per pass. */
  pages: positiveCount(20).default(2),
  pageSize: positiveCount(100).default(100),
});

const balanceSchema = z.strictObject({
  enabled: z.boolean().default(true),
  intervalMs: positiveMs.default(60_000),
});

export const trackingSettingsSchema = z.strictObject({
  poll: pollSchema.prefault({}),
  /** An open order without any settlement progress for this long is flagged as stuck. */
  stuckAfterMs: positiveMs.default(2 * 3_600_000),
  /** How often open orders are surveyed for stuck ones and the open-order gauges refreshed. */
  surveyIntervalMs: positiveMs.default(15_000),
  receiver: receiverSchema.prefault({}),
  backfill: backfillSchema.prefault({}),
  balance: balanceSchema.prefault({}),
});

export type TrackingSettings = z.output<typeof trackingSettingsSchema>;

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

/** An IP address or a CIDR range (`10.0.0.0/8`, `fd00::/8`). */
const proxyAddress = z.string().refine(
  (text) => {
    const [address = '', bits, ...rest] = text.split('/');
    const family = isIP(address);
    if (family === 0 || rest.length > 0) return false;
    return bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128));
  },
  { error: 'expected an IP address or a CIDR range, such as 10.0.0.5 or 10.0.0.0/8' },
);
const trustedProxies = z
  .union([
    z.array(proxyAddress),
    z
      .string()
      .transform((text) =>
        text
          .split(',')
          .map((item) => item.trim())
          .filter((item) => item !== ''),
      )
      .pipe(z.array(proxyAddress)),
  ])
  .refine((list) => list.length > 0, { error: 'name at least one proxy address' });

export const apiSchema = z.strictObject({
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

export type ApiSettings = z.output<typeof apiSchema>;

/** An account's name in the settings (the rule is ACCOUNT_NAME, shared with strategy files). */
const accountName = z.string().regex(ACCOUNT_NAME, {
  error: 'expected an account name of lowercase letters, digits and hyphens (at most 40)',
});

const webhookSecret = z.string().min(16, { message: 'must be at least 16 characters' });

/**
 * One account at the purchase service (`accounts:`): its own service address and token, transport and
 * pace, and its own webhook secret. The token arrives resolved from `api.tokenFile`, the secret from
 * `webhook.secretFile`.
 */
const accountSchema = z.strictObject({
  name: accountName,
  api: apiSchema.prefault({}),
  webhook: z.strictObject({ secret: webhookSecret.optional() }).prefault({}),
});

export type AccountSettings = z.output<typeof accountSchema>;

const accountsSchema = z
  .array(accountSchema)
  .min(1, { error: 'list at least one account, or remove accounts: to use the single api: block' })
  .superRefine((accounts, context) => {
    const seen = new Set<string>();
    accounts.forEach((account, index) => {
      if (seen.has(account.name))
        context.addIssue({
          code: 'custom',
          path: [index, 'name'],
          message: `account ${account.name} is listed twice`,
        });
      seen.add(account.name);
    });
    // Demo mode (the built-in sandbox) serves every account or none: half a group on a simulator is a mistake.
    const configured = accounts.filter((account) => account.api.url !== undefined).length;
    if (configured > 0 && configured < accounts.length)
      accounts.forEach((account, index) => {
        if (account.api.url === undefined)
          context.addIssue({
            code: 'custom',
            path: [index, 'api', 'url'],
            message:
              'is required: every account names its service once one does (none: the built-in sandbox)',
          });
      });
  });

/** Roles in order of rights, lowest first: a person in groups of several roles gets the highest. */
export const OIDC_ROLE_ORDER = ['viewer', 'operator', 'approver', 'admin'] as const;

const groupList = z.array(z.string().min(1, { error: 'expected a group name' }));
/** A domain of e-mail addresses, lower case, such as example.com. */
const emailDomain = z
  .string()
  .transform((text) => text.trim().toLowerCase())
  .pipe(
    z.string().regex(/^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/, {
      error: 'expected an e-mail domain such as example.com',
    }),
  );

/**
 * Single sign-on through the company's OpenID provider (`console.oidc`, src/console/oidc.ts). The client
 * secret arrives read from `clientSecretFile` by the loader; it is never written inline.
 */
export const oidcSchema = z
  .strictObject({
    /** The provider's issuer; its /.well-known/openid-configuration is read at the first sign-in. */
    issuer: z.url({
      protocol: /^https?$/,
      error: 'expected the issuer URL, such as https://login.example.com',
    }),
    clientId: z.string().min(1, { error: 'expected the client id the provider gave the console' }),
    clientSecret: z.string().min(1),
    scopes: z
      .array(z.string().regex(/^[\x21\x23-\x5B\x5D-\x7E]+$/, { error: 'expected a scope name' }))
      .default(['openid', 'email', 'profile'])
      .refine((scopes) => scopes.includes('openid'), { error: 'the scopes must include openid' }),
    /** The claim (ID token or userinfo) holding the person's groups: a list of names, or one name. */
    roleClaim: z.string().min(1).default('groups'),
    /** For each role, the groups that give it; a person in none of them is refused. */
    roles: z
      .strictObject({
        admin: groupList.default([]),
        approver: groupList.default([]),
        operator: groupList.default([]),
        viewer: groupList.default([]),
      })
      .refine((roles) => Object.values(roles).some((groups) => groups.length > 0), {
        error: 'map at least one group to a role, such as admin: [treasury-admins]',
      }),
    /**
     * The claim (ID token or userinfo) naming the accounts a person may see: a list of account names, or one.
     * Unset: people who sign in see every account. Set: read at every sign-in (an admin sees all); a person
     * whose claim names none of the deployment's accounts is refused.
     */
    accountsClaim: z.string().min(1).optional(),
    /** Unset: any e-mail domain; set: a person's verified e-mail must be in one of them. */
    allowedDomains: z
      .array(emailDomain)
      .min(1, { error: 'name at least one domain, or leave it unset' })
      .optional(),
  })
  .refine((oidc) => new URL(oidc.issuer).protocol === 'https:' || isLoopbackUrl(oidc.issuer), {
    path: ['issuer'],
    error: 'the issuer must be https (plain http only on this host, for tests)',
  });

export type OidcSettings = z.output<typeof oidcSchema>;

function isLoopbackUrl(url: string): boolean {
  const host = new URL(url).hostname;
  return host === 'localhost' || host === '127.0.0.1' || host === '[::1]';
}

/** Who may log in to the web console, and how. */
const consoleSchema = z
  .strictObject({
    /** false: no local passwords; the login page offers only single sign-on (which must be set up). */
    localLogin: z.boolean().default(true),
    oidc: oidcSchema.optional(),
    /**
     * Every person logging in with a password needs a second factor (TOTP): one without is sent to enrol
     * right after the password, before any page.
     */
    requireTotp: z.boolean().default(false),
    /** Requests one REST API token may make per minute on one replica (a burst of this many, then that pace). */
    apiRequestsPerMinute: z.number().int().min(1).max(100_000).default(600),
  })
  .refine((section) => section.localLogin || section.oidc !== undefined, {
    path: ['localLogin'],
    error: 'local login can only be turned off when console.oidc is set: nobody could log in',
  });

export const settingsSchema = z.strictObject({
  /** The single account of a deployment with one: the account `default` (see `accounts`). */
  api: apiSchema.prefault({}),
  /** Several accounts at the service, one per legal entity; unset: the `api:` block is the account `default`. */
  accounts: accountsSchema.optional(),
  database: z
    .strictObject({
      /** Unset: embedded PGlite under `dataDir`. */
      url: z
        .string()
        .regex(/^postgres(ql)?:\/\//, { message: 'expected a postgres:// or postgresql:// URL' })
        .optional(),
      dataDir: z.string().min(1).default('./data'),
      /**
       * PostgreSQL connections of one worker process (PGlite has one). Sized for the database, not for the
       * cycles in flight: a cycle holds a connection only for its statements, never across a call to the
       * service, and fewer busy backends do the same work with less CPU (bench/README.md, 26 November 2026,
       * fifth session). Two at least: a transaction waiting for a lock would otherwise hold up every
       * other statement of the process, its heartbeat included.
       */
      connections: z.number().int().min(2).max(100).default(10),
    })
    .prefault({}),
  strategies: z
    .strictObject({
      path: z.string().min(1).default('./strategies'),
      /**
       * `apply`: a changed strategy runs at once (recorded as a version approved by the worker's actor);
       * `approve`: it waits for `treasury-bot strategy approve`, the last approved version running meanwhile.
       */
      changes: z.enum(['apply', 'approve']).default('apply'),
    })
    .prefault({}),
  /** The operations listener: /metrics, /healthz, /readyz. Unset: 127.0.0.1:9464 (not public). */
  ops: z
    .strictObject({
      addr: listenAddress.optional(),
      /**
       * The proxies in front of the console (addresses or CIDR ranges, a list or comma-separated text): a
       * request from one of them is taken to come from the address its X-Forwarded-For names, which the
       * login's per-address limit counts. Unset: the peer's own address.
       */
      trustedProxies: trustedProxies.optional(),
    })
    .prefault({}),
  /**
   * Deprecated (one release): the first release's single port. It now sets the webhook receiver's port alone
   * (on 0.0.0.0) while webhook.addr is unset; the console and /metrics stay on ops.addr.
   */
  http: z.strictObject({ port: z.number().int().min(0).max(65_535).optional() }).prefault({}),
  webhook: z
    .strictObject({
      /** The receiver's own listener, started only with a secret. Unset: 0.0.0.0:8080. */
      addr: listenAddress.optional(),
      /** The `default` account's secret (see `accounts`). Unset: the receiver is off for it. */
      secret: webhookSecret.optional(),
      /** Unset: `run` does not register the receiver with the service. */
      publicUrl: httpUrl.optional(),
    })
    .prefault({}),
  dryRun: z.boolean().default(false),
  /** Reports and exports: the zone in which days, weeks and months begin, and in which dates are read. */
  reports: z
    .strictObject({
      timezone: z
        .string()
        .default('UTC')
        .refine(isKnownZone, { error: 'expected an IANA time zone such as UTC or America/Sao_Paulo' }),
    })
    .prefault({}),
  log: z.strictObject({ level: z.enum(LOG_LEVELS).default('info') }).prefault({}),
  // Sections owned by the worker helpers (scheduling, cycle and settlement tracking): add their settings
  // with defaults here; they are empty objects until then.
  engine: engineSchema.prefault({}),
  tracking: trackingSettingsSchema.prefault({}),
  notifications: notificationsSchema.prefault({}),
  console: consoleSchema.prefault({}),
});

function isKnownZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

type ParsedSettings = z.output<typeof settingsSchema>;

/**
 * The settings as the program sees them: every account in `accounts` (the single `api:` block and
 * `webhook.secret` become the account `default`), so that nothing reads a service address but through its
 * account.
 */
export type Settings = Omit<ParsedSettings, 'api' | 'accounts' | 'webhook'> & {
  accounts: readonly AccountSettings[];
  webhook: Omit<ParsedSettings['webhook'], 'secret'>;
  /** Absolute path of the settings file that was read, or undefined when none was. */
  configFile: string | undefined;
};

/** The settings as parsed, before the accounts are gathered (the loader's own step). */
export function gatherAccounts(parsed: ParsedSettings): Omit<Settings, 'configFile'> {
  const { api, accounts, webhook, ...rest } = parsed;
  const { secret, ...listener } = webhook;
  return {
    ...rest,
    webhook: listener,
    accounts: accounts ?? [{ name: DEFAULT_ACCOUNT, api, webhook: secret === undefined ? {} : { secret } }],
  };
}

/** Demo mode: no account names a service, so commands start the built-in sandbox for all of them. */
export function isDemo(settings: Pick<Settings, 'accounts'>): boolean {
  return settings.accounts.every((account) => account.api.url === undefined);
}

/** Keys whose values are never echoed in an error message. */
export const SECRET_KEYS: ReadonlySet<string> = new Set([
  'api.token',
  'webhook.secret',
  'database.url',
  'console.oidc.clientSecret',
]);
