/** The persistence layer's public surface: everything outside src/db imports from here. */
export {
  AccountNotInScopeError,
  type AccountScope,
  accountsParameter,
  EVERY_ACCOUNT,
  inScope,
  narrowScope,
  oneAccount,
} from './account-scope.js';
export { advisoryLockKey } from './advisory-key.js';
export { DatabaseTimeoutError, withinDatabaseTimeout } from './call-timeout.js';
export { type DatabaseKind, describeTarget, type ReservedConnection } from './connection.js';
export {
  CYCLE_STATES,
  isFinalState,
  isLegalTransition,
  MONEY_MAY_HAVE_LEFT,
} from './cycle-transitions.js';
export { type Database, type OpenDatabaseOptions, openDatabase } from './database.js';
export {
  classifyDatabaseFailure,
  DatabaseError,
  type DatabaseErrorCode,
  type DatabaseFailure,
  IllegalTransitionError,
  isConnectionLoss,
  sqlStateOf,
} from './errors.js';
export { roleNameProblem, WORKER_TABLE_RIGHTS, workerGrantStatements } from './grants.js';
export { toJson } from './json.js';
export {
  findMigrationsFolder,
  type MigrationResult,
  migrate,
  pendingMigrations,
  requireCurrentSchema,
} from './migrate.js';
export { type OpenWait, openMigratedDatabase, type SchemaStep } from './open-migrated.js';
export {
  type BalanceSnapshotFigures,
  type ExpectedBalance,
  type ExportedOrder,
  type OrderAggregate,
  type OrderCursor,
  type OrderExportFilter,
  type QuotesSeen,
  type ReportQueries,
  reportQueries,
  type SkipAggregate,
} from './report-queries.js';
export {
  type ApiToken,
  ApiTokenError,
  type ApiTokenFound,
  type ApiTokenInput,
  type ApiTokensRepository,
  IDEMPOTENCY_KEPT_MS,
  type IdempotencyClaim,
} from './repositories/api-tokens.js';
export {
  ApprovalError,
  type ApprovalErrorCode,
  type ApprovalsRepository,
  type ClaimedApproval,
  type CycleApproval,
  type CycleApprovalResult,
  type Envelope,
  type EnvelopeInput,
  type ParkedCycle,
} from './repositories/approvals.js';
export type { AuditAction, AuditEntry, AuditRecord, AuditRepository } from './repositories/audit.js';
export type { BalancesRepository } from './repositories/balances.js';
export { ConsoleActionError, type ConsoleActions, orderSubject } from './repositories/console-actions.js';
export type {
  AuditListed,
  ConsoleReads,
  CycleFilter,
  OpenOrders,
  OrderFilter,
  OrderListed,
  SpendPoint,
} from './repositories/console-reads.js';
export { type ConsoleStore, openConsoleStore } from './repositories/console-store.js';
export type { ControlRepository } from './repositories/control.js';
export type { CyclesRepository } from './repositories/cycles.js';
export type {
  ApprovalNeed,
  IntentDecision,
  IntentGuard,
  IntentMove,
  IntentPatch,
  IntentResult,
  IntentVerdict,
  ParkedApproval,
} from './repositories/intent.js';
export type {
  DigestFigures,
  NotificationRecord,
  NotificationRouter,
  NotificationStatus,
  NotificationsRepository,
} from './repositories/notifications.js';
export type { ApplyTrackingOptions, TrackingApplied } from './repositories/order-tracking.js';
export type { OrdersRepository } from './repositories/orders.js';
export {
  APPROVER_ROLES,
  type ConsoleSession,
  type NewPerson,
  PeopleError,
  type PeopleRepository,
  type Person,
  ROLES,
  type Role,
} from './repositories/people.js';
export type { QuotesRepository } from './repositories/quotes.js';
export type { ReplicaRecord, ReplicasRepository } from './repositories/replicas.js';
export {
  type SecondFactor,
  SecondFactorError,
  type SecondFactorRepository,
} from './repositories/second-factor.js';
export type { FiguresQuery, Period, SpendFigures } from './repositories/spend-figures.js';
export type { StrategiesRepository } from './repositories/strategies.js';
export {
  type LoadedStrategyText,
  type RunningVersion,
  type StrategyChanges,
  type StrategyVersion,
  StrategyVersionError,
  type StrategyVersionsRepository,
  type VersionResolution,
} from './repositories/strategy-versions.js';
export type { WebhookEventsRepository } from './repositories/webhook-events.js';
export { retryWhileUnreachable, type StartupWait } from './retry-while-unreachable.js';
export * from './types.js';
