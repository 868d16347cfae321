import { Command } from 'commander';
import { VERSION } from '../version.js';
import { registerApiCommands } from './api.js';
import { registerApprovalCommands } from './approvals.js';
import { registerBacktestCommands } from './backtest.js';
import { registerConsoleCommands } from './console.js';
import { registerNotifyCommands } from './notify.js';
import { registerDbCommands, registerOperatorCommands } from './operator.js';
import { registerPeopleCommands } from './people.js';
import { registerReportCommands } from './reports.js';
import { registerSandboxCommands } from './sandbox.js';
import { registerStatusCommands } from './status.js';
import { registerStrategyCommands } from './strategy.js';
import { registerTokenCommands } from './tokens.js';
import { registerValidateCommands } from './validate.js';
import { registerWorkerCommands } from './worker.js';

/**
 * Assembles the command line. Each command group lives in its own file under `src/cli/` and exports a
 * `register…(program)` function that is called here, so parsing stays apart from the work each command does.
 *
 * Commands, options and their parsers are defined up front, so help and argument errors need nothing more;
 * what a command runs on (database, engine, HTTP servers, the purchase-service client…) its action loads with
 * `await import(…)`. `--version` or one command must not pay for every other command's dependencies: loaded
 * all at once they raised the peak RSS of `export orders` over a million orders from ~178 to ~225 MB
 * (issue 19). So the files under `src/cli/` import at top level only commander, types and light modules.
 */
export function buildProgram(): Command {
  const program = new Command('treasury-bot')
    .description(
      'Treasury automation: buys USDT with BRL through the purchase service, on schedules and rules',
    )
    .version(VERSION)
    // The program's own options (--version, --help) only before a command: `strategy approve NAME --version
    // N` names a strategy version, and would otherwise print the program's.
    .enablePositionalOptions()
    .showHelpAfterError()
    .exitOverride();
  registerApiCommands(program);
  registerApprovalCommands(program);
  registerConsoleCommands(program);
  registerBacktestCommands(program);
  registerDbCommands(program);
  registerNotifyCommands(program);
  registerOperatorCommands(program);
  registerReportCommands(program);
  registerPeopleCommands(program);
  registerSandboxCommands(program);
  registerStatusCommands(program);
  registerStrategyCommands(program);
  registerTokenCommands(program);
  registerValidateCommands(program);
  registerWorkerCommands(program);
  return program;
}
