import type { Command } from 'commander';
import type { LoadResult, Strategy } from '../strategy/index.js';
// The problem formatter alone, eagerly; the strategy loader (zod, yaml) when the command runs.
import { formatProblem } from '../strategy/problems.js';

interface ValidateFlags {
  json?: boolean;
}

export function registerValidateCommands(program: Command): void {
  program
    .command('validate')
    .description(
      'check strategy files and worker settings; every problem is printed as file:line:col: message',
    )
    .argument(
      '[path]',
      'a strategy file, or a folder of *.yaml/*.yml (default: $TREASURY_STRATEGIES or ./strategies)',
    )
    .option('--json', 'print one JSON document {valid, strategies, problems} on stdout')
    .action(runValidate);
}

async function runValidate(path: string | undefined, flags: ValidateFlags): Promise<void> {
  const { loadStrategies, resolveStrategiesPath, dateTimeTextOf } = await import('../strategy/index.js');
  const { accounts, problems: settingsProblems } = await readSettings();
  // With the settings read, each strategy's account is checked against theirs, as `run` will.
  const result = await loadStrategies(resolveStrategiesPath(path), accounts);
  if (flags.json) process.stdout.write(`${JSON.stringify(toJson(result, settingsProblems))}\n`);
  else printHuman(result, settingsProblems, dateTimeTextOf);
  // exitCode rather than exit(): stdout may be a pipe that has not been flushed yet.
  process.exitCode = result.valid && settingsProblems.length === 0 ? 0 : 1;
}

interface ProblemView {
  file: string;
  line: number | null;
  col: number | null;
  key: string;
  message: string;
}

/**
 * The worker settings (TREASURY_CONFIG and env) are checked too: a bad port stops `run` as surely as a bad
 * file. Their account names when they are valid; their problems when not.
 */
async function readSettings(): Promise<{ accounts?: string[]; problems: ProblemView[] }> {
  const {
    formatProblem: formatSettingsProblem,
    loadSettings,
    SettingsError,
  } = await import('../config/index.js');
  try {
    const settings = loadSettings({ env: process.env });
    return { accounts: settings.accounts.map((account) => account.name), problems: [] };
  } catch (error) {
    if (!(error instanceof SettingsError)) throw error;
    const problems = error.problems.map((problem) => {
      const position = /^(.*):(\d+):(\d+)$/.exec(problem.where);
      return {
        file: position ? position[1]! : problem.where,
        line: position ? Number(position[2]) : null,
        col: position ? Number(position[3]) : null,
        key: problem.key,
        message: formatSettingsProblem(problem),
      };
    });
    return { problems };
  }
}

function toJson(result: LoadResult, settingsProblems: ProblemView[]) {
  const valid = result.valid && settingsProblems.length === 0;
  const strategyProblems = result.valid
    ? []
    : result.problems.map(({ file, line, col, key, message }) => ({ file, line, col, key, message }));
  return {
    valid,
    strategies: result.valid ? result.strategies.map((strategy) => strategy.name) : [],
    problems: [...strategyProblems, ...settingsProblems],
  };
}

function printHuman(
  result: LoadResult,
  settingsProblems: ProblemView[],
  dateTimeTextOf: (instant: Date, timeZone: string) => string,
): void {
  const invalidSettings = settingsProblems.length > 0;
  if (invalidSettings) {
    const count = `${settingsProblems.length} problem${settingsProblems.length === 1 ? '' : 's'}`;
    process.stderr.write(
      `${settingsProblems.map((problem) => problem.message).join('\n')}\ninvalid settings: ${count}; the strategies' accounts are checked once the settings are valid\n`,
    );
  }
  const files = `${result.files.length} file${result.files.length === 1 ? '' : 's'}`;
  if (result.valid && invalidSettings) {
    // Not "valid": the run as a whole is not, and stdout would say otherwise to a script reading it.
    const count = `${result.strategies.length} strateg${result.strategies.length === 1 ? 'y' : 'ies'}`;
    process.stderr.write(`strategies: ${count} in ${files}, valid on their own\n`);
    return;
  }
  if (result.valid) {
    const { strategies } = result;
    const lines = strategies.map((strategy) => {
      const flags = [strategy.enabled ? '' : 'disabled', strategy.dryRun ? 'dry run' : ''].filter(Boolean);
      const suffix = flags.length > 0 ? ` (${flags.join(', ')})` : '';
      return `  ${strategy.name}: ${strategy.kind} ${strategy.symbol}${targetSummary(strategy, dateTimeTextOf)} "${strategy.schedule}" ${strategy.timezone}${suffix}`;
    });
    const count = `${strategies.length} strateg${strategies.length === 1 ? 'y' : 'ies'}`;
    process.stdout.write(`valid: ${count} in ${files}\n${lines.join('\n')}\n`);
    return;
  }
  const count = `${result.problems.length} problem${result.problems.length === 1 ? '' : 's'}`;
  process.stderr.write(
    `${result.problems.map(formatProblem).join('\n')}\ninvalid: ${count} in ${files}; nothing was loaded\n`,
  );
}

/** A target's total and window, in the strategy's zone as the file writes it. */
function targetSummary(
  strategy: Strategy,
  dateTimeTextOf: (instant: Date, timeZone: string) => string,
): string {
  if (strategy.kind !== 'target') return '';
  const { measure, total, start, end } = strategy.target;
  const at = (instant: Date) => dateTimeTextOf(instant, strategy.timezone);
  return ` ${measure} "${measure === 'spend' ? total.toFixed(2) : total.toFixed()}" from ${at(start)} to ${at(end)} every`;
}
