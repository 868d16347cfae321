/**
 * Bad input to a backtest or a replay: a price file that cannot be read or parsed, a range or setting that
 * makes no sense, a strategy that never fires. The message names the file, line and value; the CLI prints it
 * without a stack and exits 1.
 */
export class BacktestInputError extends Error {
  override readonly name = 'BacktestInputError';
  readonly code = 'BACKTEST_INPUT';
}
