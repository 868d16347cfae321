/**
 * Backtest and replay: strategies run over a recorded price series through the worker's own pure rules
 * (strategy/), and the series itself, which the sandbox can replay. Imports strategy/ and money.ts only.
 */
export { renderChart } from './chart.js';
export { DEFAULT_CREDIT_TOTAL, DEFAULT_SETTLE_DELAY_MS } from './credit-line.js';
export { BacktestInputError } from './input-error.js';
export { DEFAULT_MAX_GAP_MS, PriceSeries, parsePriceCsv, readPriceFile } from './price-series.js';
export { type BacktestReport, formatReport, reportOf, type TargetSummary } from './report.js';
export { type BacktestRun, runBacktest, type SlotDecision, type StrategyRun } from './simulate.js';
export type { TallySummary } from './tally.js';
