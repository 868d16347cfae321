/**
 * Reports, the accounting export and the reconciliation report: computations over the database (and, for
 * the reconciliation, the service) that the CLI prints and an HTTP route can serve as they are.
 */
export { type ReportRouteDeps, registerReportRoutes, sendOrderExport } from './http-routes.js';
export {
  EXPORT_COLUMNS,
  EXPORT_FORMATS,
  type ExportFormat,
  type ExportOptions,
  exportOrders,
  orderPage,
  ordersOf,
} from './order-export.js';
export {
  checkPeriod,
  checkTimeZone,
  describeInstant,
  GROUPINGS,
  type Grouping,
  type LabelledPeriod,
  type Period,
  parseReportInstant,
  periodsOf,
  ReportArgumentError,
} from './periods.js';
export {
  type Difference,
  type ReconciledAccount,
  type Reconciliation,
  type ReconciliationReport,
  reconcileAccounts,
  reconcilePeriod,
  type SettlementLine,
} from './reconciliation.js';
export {
  AVERAGE_SCALE,
  buildReport,
  EXTERNAL,
  FIAT_SCALE,
  type Report,
  type ReportGroup,
  ROUNDING_NOTE,
  type SavingsLine,
} from './summary.js';
