/** The worker engine's public surface (composition in src/app.ts; benchmarks and tests build on these). */
export { type ApiObserver, createApiObserver, observeGate } from './api-observer.js';
export * from './concurrency.js';
export {
  type AccountContext,
  type AccountLink,
  type EngineContext,
  inAccount,
  UnknownAccountError,
} from './context.js';
export { type CycleRequest, resumeApprovedCycle, runCycle } from './cycle.js';
export { type QuoteDeadline, startQuoteDeadline } from './deadline.js';
export { EngineError, type EngineErrorCode } from './engine-errors.js';
export { KillSwitch } from './kill-switch.js';
export { createLiveness, type Liveness } from './liveness.js';
export {
  type ApprovalsResult,
  Maintenance,
  type MaintenanceOptions,
  type MaintenanceReport,
} from './maintenance.js';
export { findMissedSlots, type MissedSlot } from './missed-slots.js';
export {
  clearStrategyHalt,
  OPERATOR_REASON,
  OperatorActionError,
  type OperatorErrorCode,
  type Resolution,
  type ResolveResult,
  resolveUnsureCycle,
} from './operator-actions.js';
export { type MatchVerdict, matchOrders } from './order-matching.js';
export {
  type CycleOutcome,
  type CycleReport,
  ENGINE_REASONS,
  type EngineReason,
  isOkOutcome,
} from './outcomes.js';
export { createReadiness, type Readiness } from './readiness.js';
export { type ReconcileResult, reconcileCycle, reconcileUnsureCycles } from './reconcile.js';
export { type RecoveryResult, recoverAbandonedCycles } from './recovery.js';
export { createReplicaId } from './replica-id.js';
export { Scheduler } from './scheduler.js';
export { handleSignals } from './signals.js';
export { recordStrategiesSeen } from './strategy-records.js';
export {
  AUTOMATION,
  OnceRefusal,
  resolveStrategyVersions,
  runningVersionOf,
  type VersionedStrategies,
  type VersionPolicy,
} from './strategy-versions.js';
export { type ReloadResult, Worker, type WorkerOptions } from './worker.js';
