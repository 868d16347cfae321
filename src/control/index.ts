/**
 * What people do and see: the operations and reads the command line, the web console and the REST API share.
 */
export { AccountScopeError, requireEveryAccount } from './accounts.js';
export { type ApprovalControl, checkPerson, createApprovalControl, PERSON_NAME } from './approvals.js';
export { readStatus, type StatusReport } from './status.js';
export { listStrategies, type ReviewedStrategy, type VersionSummary, versionSummary } from './strategies.js';
export { readTargets, type TargetReport } from './targets.js';
