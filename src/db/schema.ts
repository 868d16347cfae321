/**
 * The tables of the decision and settlement record. Everything lives in the `public` schema because the
 * foreign keys drizzle-kit generates name `"public"."table"`. States and kinds are `text` with CHECK
 * constraints rather than enum types: adding a value later is then a one-line migration that needs no
 * `ALTER TYPE` outside a transaction.
 */
import { sql } from 'drizzle-orm';
import {
  type AnyPgColumn,
  bigint,
  boolean,
  check,
  index,
  integer,
  jsonb,
  numeric,
  pgTable,
  primaryKey,
  smallint,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { CYCLE_STATES } from './cycle-transitions.js';
import { moneyColumn } from './money-column.js';

const instant = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });
const id = () => bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity();

export const strategies = pgTable('strategies', {
  name: text('name').primaryKey(),
  kind: text('kind').notNull(),
  /** The account the strategy buys for, as its running version names it (`default` when it names none). */
  account: text('account').notNull().default('default'),
  config: jsonb('config').notNull(),
  configHash: text('config_hash').notNull(),
  firstSeenAt: instant('first_seen_at').notNull(),
  lastSeenAt: instant('last_seen_at').notNull(),
  haltedAt: instant('halted_at'),
  haltReason: text('halt_reason'),
});

export const cycles = pgTable(
  'cycles',
  {
    id: id(),
    strategy: text('strategy')
      .notNull()
      .references(() => strategies.name),
    /** The account at the service (settings `accounts`); rows from before several accounts are `default`. */
    account: text('account').notNull().default('default'),
    slot: instant('slot').notNull(),
    trigger: text('trigger').notNull(),
    state: text('state').notNull(),
    owner: text('owner').notNull(),
    attempts: integer('attempts').notNull().default(0),
    reasonCode: text('reason_code'),
    errorCode: text('error_code'),
    errorMessage: text('error_message'),
    quoteRecordId: bigint('quote_record_id', { mode: 'number' }).references((): AnyPgColumn => quotes.id),
    quoteId: text('quote_id'),
    amount: moneyColumn('amount'),
    price: moneyColumn('price'),
    totalCost: moneyColumn('total_cost'),
    balanceSnapshotId: bigint('balance_snapshot_id', { mode: 'number' }).references(
      (): AnyPgColumn => balanceSnapshots.id,
    ),
    trace: jsonb('trace'),
    serviceOrderId: text('service_order_id'),
    claimedAt: instant('claimed_at').notNull(),
    updatedAt: instant('updated_at').notNull(),
    submittedAt: instant('submitted_at'),
    finishedAt: instant('finished_at'),
    leaseOwner: text('lease_owner'),
    leaseUntil: instant('lease_until'),
    /**
     * What the service's record of this cycle's order says that differs from what the cycle asked and was
     * quoted (`[{ field, expected, got }]`); null when it agrees. Set, the strategy is halted for a person.
     */
    discrepancy: jsonb('discrepancy'),
    /** The envelope this cycle's order was charged to, when it needed approval and fitted one. */
    envelopeId: bigint('envelope_id', { mode: 'number' }).references((): AnyPgColumn => envelopes.id),
    /** The strategy version the cycle ran under (strategy_versions); null for cycles from before versions. */
    strategyVersion: integer('strategy_version'),
  },
  (table) => [
    uniqueIndex('cycles_strategy_slot_key').on(table.strategy, table.slot),
    index('cycles_state_idx').on(table.state, table.updatedAt),
    index('cycles_claimed_at_idx').on(table.claimedAt),
    // The cooldown's "last order sent" read on every cycle: the newest submitted_at of one strategy without
    // walking its whole history.
    index('cycles_strategy_submitted_idx').on(table.strategy, table.submittedAt),
    // Ownership of a listed order by its quoteId, for the external scan (quote ids are one account's).
    index('cycles_account_quote_id_idx').on(table.account, table.quoteId),
    // The room left in an envelope: the cost of the cycles charged to it.
    index('cycles_envelope_idx').on(table.envelopeId).where(sql`${table.envelopeId} is not null`),
    // The discrepancies that status and the console's Attention page list, newest first: a handful among
    // every cycle ever run (a full scan took 73 ms with 100,000 cycles).
    index('cycles_discrepancy_idx')
      .on(table.updatedAt, table.id)
      .where(sql`${table.discrepancy} is not null`),
    check('cycles_trigger_check', sql`${table.trigger} in ('schedule', 'once', 'missed')`),
    check(
      'cycles_state_check',
      sql`${table.state} in (${sql.raw(CYCLE_STATES.map((state) => `'${state}'`).join(', '))})`,
    ),
  ],
);

/**
 * Every distinct configuration of a strategy (by its config hash), numbered 1, 2, 3 ... per strategy, with
 * the document as first written and its unified diff against the version numbered before it. A version is
 * approved once (by a person, or by the automation when changes apply at once); exactly one version per
 * strategy is `running`: the one the worker uses. No foreign key to `strategies`: a new strategy waiting for
 * approval has versions but no `strategies` row until it first runs.
 */
export const strategyVersions = pgTable(
  'strategy_versions',
  {
    strategy: text('strategy').notNull(),
    version: integer('version').notNull(),
    configHash: text('config_hash').notNull(),
    content: text('content').notNull(),
    diff: text('diff').notNull(),
    createdAt: instant('created_at').notNull(),
    createdBy: text('created_by').notNull(),
    approvedAt: instant('approved_at'),
    approvedBy: text('approved_by'),
    running: boolean('running').notNull().default(false),
  },
  (table) => [
    primaryKey({ columns: [table.strategy, table.version] }),
    uniqueIndex('strategy_versions_hash_key').on(table.strategy, table.configHash),
    uniqueIndex('strategy_versions_running_key').on(table.strategy).where(sql`${table.running}`),
    check('strategy_versions_version_check', sql`${table.version} > 0`),
    check('strategy_versions_running_check', sql`not ${table.running} or ${table.approvedAt} is not null`),
  ],
);

export const quotes = pgTable(
  'quotes',
  {
    id: id(),
    cycleId: bigint('cycle_id', { mode: 'number' }).references(() => cycles.id),
    quoteId: text('quote_id').notNull(),
    symbol: text('symbol').notNull(),
    amount: moneyColumn('amount').notNull(),
    price: moneyColumn('price').notNull(),
    totalCost: moneyColumn('total_cost').notNull(),
    totalFilled: moneyColumn('total_filled').notNull(),
    // The service's raw value (unit undocumented) digit for digit, null when it sent none: numeric (the
    // Decimal column of money, though it is no amount), so that no column of the schema is a float.
    expiresIn: moneyColumn('expires_in'),
    requestedAt: instant('requested_at').notNull(),
    receivedAt: instant('received_at').notNull(),
    deadlineAt: instant('deadline_at').notNull(),
  },
  (table) => [index('quotes_cycle_idx').on(table.cycleId)],
);

export const balanceSnapshots = pgTable(
  'balance_snapshots',
  {
    id: id(),
    /** The account at the service (settings `accounts`); rows from before several accounts are `default`. */
    account: text('account').notNull().default('default'),

    fiatCurrency: text('fiat_currency').notNull(),
    fiatBalance: moneyColumn('fiat_balance').notNull(),
    cryptoCurrency: text('crypto_currency').notNull(),
    cryptoBalance: moneyColumn('crypto_balance').notNull(),
    creditTotal: moneyColumn('credit_total').notNull(),
    creditUsed: moneyColumn('credit_used').notNull(),
    creditAvailable: moneyColumn('credit_available').notNull(),
    canWithdraw: boolean('can_withdraw').notNull(),
    takenAt: instant('taken_at').notNull(),
    cycleId: bigint('cycle_id', { mode: 'number' }).references(() => cycles.id),
  },
  (table) => [index('balance_snapshots_account_taken_at_idx').on(table.account, table.takenAt)],
);

const settlementStatusCheck = (column: unknown) =>
  sql`${column} in ('pending', 'partial', 'paid', 'withdrawn', 'settled')`;

export const orders = pgTable(
  'orders',
  {
    id: id(),
    /** The account at the service (settings `accounts`); rows from before several accounts are `default`. */
    account: text('account').notNull().default('default'),
    serviceOrderId: text('service_order_id').notNull(),
    cycleId: bigint('cycle_id', { mode: 'number' }).references(() => cycles.id),
    origin: text('origin').notNull(),
    quoteId: text('quote_id'),
    symbol: text('symbol').notNull(),
    amount: moneyColumn('amount').notNull(),
    price: moneyColumn('price').notNull(),
    side: text('side').notNull(),
    serviceTimestamp: instant('service_timestamp').notNull(),
    status: text('status').notNull(),
    expectedAmount: moneyColumn('expected_amount'),
    receivedAmount: moneyColumn('received_amount'),
    withdrawnAmount: moneyColumn('withdrawn_amount'),
    lastTracking: jsonb('last_tracking'),
    createdAt: instant('created_at').notNull(),
    updatedAt: instant('updated_at').notNull(),
    lastProgressAt: instant('last_progress_at').notNull(),
    nextCheckAt: instant('next_check_at').notNull(),
    leaseOwner: text('lease_owner'),
    leaseUntil: instant('lease_until'),
    stuckFlaggedAt: instant('stuck_flagged_at'),
    settledAt: instant('settled_at'),
  },
  (table) => [
    // An order id is unique at one account's service; two accounts may be served by different services.
    uniqueIndex('orders_account_service_order_id_key').on(table.account, table.serviceOrderId),
    index('orders_cycle_idx').on(table.cycleId),
    index('orders_due_idx').on(table.nextCheckAt).where(sql`${table.settledAt} is null`),
    // Reports and the accounting export read a period of orders in placed-at order, page by page.
    index('orders_service_timestamp_idx').on(table.serviceTimestamp, table.id),
    check('orders_origin_check', sql`${table.origin} in ('cycle', 'external')`),
    check('orders_status_check', settlementStatusCheck(table.status)),
  ],
);

export const settlementEvents = pgTable(
  'settlement_events',
  {
    id: id(),
    orderId: bigint('order_id', { mode: 'number' })
      .notNull()
      .references(() => orders.id),
    source: text('source').notNull(),
    fromStatus: text('from_status'),
    toStatus: text('to_status').notNull(),
    expectedAmount: moneyColumn('expected_amount'),
    receivedAmount: moneyColumn('received_amount'),
    withdrawnAmount: moneyColumn('withdrawn_amount'),
    withdrawal: jsonb('withdrawal'),
    anomaly: text('anomaly'),
    recordedAt: instant('recorded_at').notNull(),
  },
  (table) => [
    index('settlement_events_order_idx').on(table.orderId, table.id),
    check(
      'settlement_events_source_check',
      sql`${table.source} in ('poll', 'webhook', 'reconcile', 'create')`,
    ),
    check('settlement_events_to_status_check', settlementStatusCheck(table.toStatus)),
  ],
);

export const webhookEvents = pgTable(
  'webhook_events',
  {
    id: id(),
    /** The account whose path (and secret) the event arrived on. */
    account: text('account').notNull().default('default'),
    dedupeKey: text('dedupe_key').notNull(),
    kind: text('kind').notNull(),
    serviceOrderId: text('service_order_id'),
    payload: jsonb('payload').notNull(),
    receivedAt: instant('received_at').notNull(),
    processedAt: instant('processed_at'),
    status: text('status').notNull().default('pending'),
  },
  (table) => [
    uniqueIndex('webhook_events_account_dedupe_key_key').on(table.account, table.dedupeKey),
    index('webhook_events_pending_idx').on(table.receivedAt).where(sql`${table.status} = 'pending'`),
    check('webhook_events_status_check', sql`${table.status} in ('pending', 'processed', 'unknown_order')`),
  ],
);

/** The kill switch: exactly one row (id = 1), shared by every replica. */
export const control = pgTable(
  'control',
  {
    id: smallint('id').primaryKey().default(1),
    paused: boolean('paused').notNull(),
    reason: text('reason'),
    changedAt: instant('changed_at').notNull(),
    changedBy: text('changed_by').notNull(),
  },
  (table) => [check('control_single_row_check', sql`${table.id} = 1`)],
);

/**
 * The `run` processes sharing this database, each with a heartbeat. A row whose heartbeat stopped belongs to
 * a process that died (a clean stop deletes its row after draining): its in-flight work is taken over at once.
 */
export const replicas = pgTable('replicas', {
  id: text('id').primaryKey(),
  host: text('host').notNull(),
  pid: integer('pid').notNull(),
  startedAt: instant('started_at').notNull(),
  heartbeatAt: instant('heartbeat_at').notNull(),
  // The pace the replica sends requests to the service at (requests per second, learnt from its 429s and
  // capped by api.rateLimit), as of its last heartbeat; null while it has none. For `status`.
  apiPace: numeric('api_pace'),
});

/**
 * The notification outbox: one row per (message, channel), written in the transaction of the fact it
 * reports and delivered at least once by the delivery loop (src/notify/). `id` is what the receiver sees and
 * dedupes on; `seq` orders the messages of one subject. A claimed row stays `pending` with its
 * `next_attempt_at` pushed past the delivery's timeout: a replica that dies mid-delivery leaves it due again.
 */
export const notifications = pgTable(
  'notifications',
  {
    id: text('id').primaryKey(),
    seq: bigint('seq', { mode: 'number' }).notNull().generatedAlwaysAsIdentity(),
    type: text('type').notNull(),
    subject: text('subject').notNull(),
    occurredAt: instant('occurred_at').notNull(),
    data: jsonb('data').notNull(),
    channel: text('channel').notNull(),
    status: text('status').notNull().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: instant('next_attempt_at').notNull(),
    lastError: text('last_error'),
    createdAt: instant('created_at').notNull(),
    sentAt: instant('sent_at'),
  },
  (table) => [
    index('notifications_due_idx').on(table.nextAttemptAt).where(sql`${table.status} = 'pending'`),
    index('notifications_subject_idx')
      .on(table.subject, table.channel, table.seq)
      .where(sql`${table.status} = 'pending'`),
    index('notifications_recent_idx').on(table.seq),
    check('notifications_status_check', sql`${table.status} in ('pending', 'sent', 'dead')`),
  ],
);

/** The people who may log in to the web console; a disabled person keeps the row (the audit log names them). */
export const users = pgTable(
  'users',
  {
    id: id(),
    name: text('name').notNull(),
    role: text('role').notNull(),
    /**
     * `scrypt$N$r$p$salt$hash` (base64url parts), so the cost can rise without a migration. Null for a person
     * who signs in through the identity provider only (migration 0017).
     */
    passwordHash: text('password_hash'),
    createdAt: instant('created_at').notNull(),
    disabledAt: instant('disabled_at'),
    /** A person created by single sign-on: the provider's issuer and subject, stable across renames there. */
    oidcIssuer: text('oidc_issuer'),
    oidcSubject: text('oidc_subject'),
    /** The accounts whose rows this person sees and acts on; null: every account (an admin always has all). */
    accounts: text('accounts').array(),
  },
  (table) => [
    uniqueIndex('users_name_key').on(table.name),
    // Names are case-insensitive: stored folded (migration 0012), so `Ana` and `ana` are one person.
    check('users_name_folded_check', sql`${table.name} = lower(${table.name})`),
    uniqueIndex('users_oidc_identity_key').on(table.oidcIssuer, table.oidcSubject),
    check('users_role_check', sql`${table.role} in ('viewer', 'operator', 'approver', 'admin')`),
  ],
);

/**
 * Console sessions. The cookie carries a random token; only its SHA-256 is stored, so a copy of this table
 * logs nobody in. Revoked by logout, by disabling the person or changing the password, and idle ones expire.
 */
export const consoleSessions = pgTable(
  'console_sessions',
  {
    tokenHash: text('token_hash').primaryKey(),
    userId: bigint('user_id', { mode: 'number' })
      .notNull()
      .references(() => users.id),
    csrfToken: text('csrf_token').notNull(),
    createdAt: instant('created_at').notNull(),
    lastSeenAt: instant('last_seen_at').notNull(),
    revokedAt: instant('revoked_at'),
  },
  (table) => [index('console_sessions_user_idx').on(table.userId)],
);

/**
 * A person's second factor (TOTP, RFC 6238), one row per person who enrolled. The secret is kept as is
 * (base32): unlike a password it must be read back to check a code, and a key to encrypt it would live in
 * the same process settings that reach this database (README, "Second factor"). `confirmed_at` is null
 * while the enrolment waits for its first code; `last_step` is the newest time step a code was accepted
 * for, so a code is accepted once.
 */
export const secondFactors = pgTable('second_factors', {
  userId: bigint('user_id', { mode: 'number' })
    .primaryKey()
    .references(() => users.id),
  secret: text('secret').notNull(),
  enrolledAt: instant('enrolled_at').notNull(),
  confirmedAt: instant('confirmed_at'),
  lastStep: bigint('last_step', { mode: 'number' }),
});

/** Recovery codes of a second factor: only their SHA-256, each usable once (`used_at`). */
export const recoveryCodes = pgTable(
  'recovery_codes',
  {
    userId: bigint('user_id', { mode: 'number' })
      .notNull()
      .references(() => users.id),
    codeHash: text('code_hash').notNull(),
    usedAt: instant('used_at'),
  },
  (table) => [primaryKey({ columns: [table.userId, table.codeHash] })],
);

/**
 * Logins half done: the password was right and the second factor is still to come. The browser holds a
 * random token (its SHA-256 here); such a login opens no session and grants nothing but the code form.
 */
export const loginChallenges = pgTable(
  'login_challenges',
  {
    tokenHash: text('token_hash').primaryKey(),
    userId: bigint('user_id', { mode: 'number' })
      .notNull()
      .references(() => users.id),
    createdAt: instant('created_at').notNull(),
  },
  (table) => [index('login_challenges_user_idx').on(table.userId)],
);

/**
 * What people did, append-only: a trigger refuses UPDATE and DELETE for every role (migration 0007), and
 * the documented grant gives the worker's role INSERT and SELECT only.
 */
export const auditLog = pgTable(
  'audit_log',
  {
    id: id(),
    at: instant('at').notNull(),
    actor: text('actor').notNull(),
    action: text('action').notNull(),
    subject: text('subject'),
    before: jsonb('before'),
    after: jsonb('after'),
  },
  (table) => [index('audit_log_at_idx').on(table.at)],
);

/**
 * What people approved in advance: a strategy's cycles that need approval may buy within it at once (order
 * at most `max_order`, all its orders at most `max_total`, the quote's price at most `max_price`, between
 * `valid_from` and `valid_until`). Active from `active_at`, set when `approvers_required` distinct people
 * other than its creator approved it; revoked envelopes never charge again.
 */
export const envelopes = pgTable(
  'envelopes',
  {
    id: id(),
    strategy: text('strategy')
      .notNull()
      .references(() => strategies.name),
    maxOrder: moneyColumn('max_order').notNull(),
    maxTotal: moneyColumn('max_total').notNull(),
    maxPrice: moneyColumn('max_price'),
    validFrom: instant('valid_from').notNull(),
    validUntil: instant('valid_until').notNull(),
    approversRequired: integer('approvers_required').notNull(),
    createdBy: text('created_by').notNull(),
    createdAt: instant('created_at').notNull(),
    activeAt: instant('active_at'),
    revokedAt: instant('revoked_at'),
    revokedBy: text('revoked_by'),
  },
  (table) => [
    index('envelopes_strategy_idx').on(table.strategy, table.validUntil),
    check('envelopes_window_check', sql`${table.validFrom} < ${table.validUntil}`),
    check('envelopes_approvers_check', sql`${table.approversRequired} >= 1`),
  ],
);

/**
 * A parked cycle's request for approval, written with the move to `awaiting_approval`: the rule's figures
 * as they were (required approvers, deadline, the parked quote's price and the default maximum price of the
 * fresh quote) and, once decided, the decision.
 */
export const approvalRequests = pgTable(
  'approval_requests',
  {
    cycleId: bigint('cycle_id', { mode: 'number' })
      .primaryKey()
      .references(() => cycles.id),
    approversRequired: integer('approvers_required').notNull(),
    parkedAt: instant('parked_at').notNull(),
    expiresAt: instant('expires_at').notNull(),
    parkedPrice: moneyColumn('parked_price').notNull(),
    defaultMaxPrice: moneyColumn('default_max_price').notNull(),
    /** The price the fresh quote may have at most: the lowest of every approver's (a blank is the default). */
    approvedMaxPrice: moneyColumn('approved_max_price'),
    decision: text('decision'),
    decidedAt: instant('decided_at'),
    decidedBy: text('decided_by'),
    reason: text('reason'),
  },
  (table) => [
    index('approval_requests_open_idx').on(table.expiresAt).where(sql`${table.decision} is null`),
    check('approval_requests_decision_check', sql`${table.decision} in ('approved', 'rejected', 'expired')`),
  ],
);

/** One person's approval of a parked cycle or an envelope: a person counts once per subject. */
export const approvals = pgTable(
  'approvals',
  {
    id: id(),
    subjectKind: text('subject_kind').notNull(),
    subjectId: bigint('subject_id', { mode: 'number' }).notNull(),
    person: text('person').notNull(),
    at: instant('at').notNull(),
    /** For a cycle: the highest price this approver accepts for the fresh quote. */
    maxPrice: moneyColumn('max_price'),
  },
  (table) => [
    uniqueIndex('approvals_subject_person_key').on(table.subjectKind, table.subjectId, table.person),
    check('approvals_subject_kind_check', sql`${table.subjectKind} in ('cycle', 'envelope')`),
  ],
);

/**
 * Bearer tokens of the REST API (`treasury-bot token add`). The token is shown once; only the SHA-256 of its
 * secret part is kept, found by its public `lookup` part, so a copy of this table authenticates nobody.
 * `accounts` null: every account. Read on every request, so a revocation or an expiry holds at the next
 * request on every replica.
 */
export const apiTokens = pgTable(
  'api_tokens',
  {
    id: id(),
    name: text('name').notNull(),
    role: text('role').notNull(),
    accounts: text('accounts').array(),
    lookup: text('lookup').notNull(),
    secretHash: text('secret_hash').notNull(),
    createdAt: instant('created_at').notNull(),
    createdBy: text('created_by').notNull(),
    expiresAt: instant('expires_at'),
    lastUsedAt: instant('last_used_at'),
    revokedAt: instant('revoked_at'),
    revokedBy: text('revoked_by'),
  },
  (table) => [
    // A revoked token keeps its row (the audit log names it); its name may then be given to a new one.
    uniqueIndex('api_tokens_live_name_key').on(table.name).where(sql`${table.revokedAt} is null`),
    uniqueIndex('api_tokens_lookup_key').on(table.lookup),
    check('api_tokens_name_folded_check', sql`${table.name} = lower(${table.name})`),
    check('api_tokens_role_check', sql`${table.role} in ('viewer', 'operator', 'approver', 'admin')`),
  ],
);

/**
 * The first answer to each POST of the REST API that carried an `Idempotency-Key`, per token: a replay gets
 * it again, a different request under the same key is refused. `status` null: the first request is still
 * running. Rows older than a day are deleted.
 */
export const apiIdempotencyKeys = pgTable(
  'api_idempotency_keys',
  {
    tokenId: bigint('token_id', { mode: 'number' })
      .notNull()
      .references(() => apiTokens.id),
    key: text('key').notNull(),
    requestHash: text('request_hash').notNull(),
    status: smallint('status'),
    answer: jsonb('answer'),
    createdAt: instant('created_at').notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.tokenId, table.key] }),
    index('api_idempotency_keys_created_idx').on(table.createdAt),
  ],
);
