/**
 * Governed strategy changes from the command line: `strategy versions NAME`, `strategy diff NAME --version N`
 * and `strategy approve NAME --version N --by PERSON`. PERSON is the operator's declared name (--by, else
 * TREASURY_ACTOR); the command line has no login, so the rule it can enforce is that the name a version was
 * recorded under (the worker's TREASURY_ACTOR, or `automation`) cannot approve it. An error is one line on
 * stderr and exit 1.
 */
import type { Command } from 'commander';
import type { Database, StrategyVersion } from '../db/index.js';
import { withCommandDatabase } from './command-database.js';
import {
  CliArgumentError,
  cell,
  declaredPerson,
  printErrorLine,
  printJson,
  printLines,
  renderTable,
} from './terminal.js';

export function registerStrategyCommands(program: Command): void {
  const strategy = program
    .command('strategy')
    .description('strategy versions: list them, show a diff, approve a change (strategies.changes: approve)');
  strategy
    .command('versions')
    .description('every version of a strategy: who recorded and approved it, and which one runs')
    .argument('<name>', 'the strategy name')
    .option('--json', 'print one JSON document on stdout')
    .action((name: string, flags: { json?: boolean }) =>
      withDatabase(async (database) => {
        const { versionSummary } = await import('../control/index.js');
        const listed = (await versionsOf(database, name)).map(versionSummary);
        if (flags.json) {
          printJson({ strategy: name, versions: listed }, []);
          return;
        }
        printLines(
          renderTable(
            ['version', 'state', 'changes', 'recorded', 'by', 'approved', 'by'],
            listed.map((v) => [
              String(v.version),
              v.state,
              `+${v.linesAdded} -${v.linesRemoved}`,
              cell(v.createdAt),
              v.createdBy,
              cell(v.approvedAt),
              v.approvedBy ?? '-',
            ]),
          ),
          [],
        );
      }),
    );
  strategy
    .command('diff')
    .description('the unified diff of a version against the version before it')
    .argument('<name>', 'the strategy name')
    .requiredOption('--version <n>', 'the version number (see `strategy versions`)')
    .action((name: string, flags: { version: string }) =>
      withDatabase(async (database) => {
        const number = parseVersion(flags.version);
        const version = await findVersion(await versionsOf(database, name), name, number);
        process.stdout.write(
          version.diff === '' ? `version ${number} of ${name}: no change\n` : version.diff,
        );
      }),
    );
  strategy
    .command('approve')
    .description(
      'approve a version: running workers run it from the next slot (within engine.approvals.pollMs)',
    )
    .argument('<name>', 'the strategy name')
    .requiredOption('--version <n>', 'the version number (see `strategy versions`)')
    .option('--by <person>', 'who approves (default: TREASURY_ACTOR)')
    .option('--json', 'print one JSON document on stdout')
    .action((name: string, flags: { version: string; by?: string; json?: boolean }) =>
      withDatabase(async (database) => {
        const number = parseVersion(flags.version);
        const person = await personOf(flags.by);
        const approved = await database.strategyVersions.approve(name, number, person);
        const { versionSummary } = await import('../control/index.js');
        if (flags.json) printJson(versionSummary(approved), []);
        else
          printLines(
            [
              `version ${number} of ${name} approved by ${person}; running workers switch to it on their next look`,
            ],
            [],
          );
      }),
    );
}

async function versionsOf(database: Database, name: string): Promise<StrategyVersion[]> {
  const { StrategyVersionError } = await import('../db/index.js');
  const versions = await database.strategyVersions.list(name);
  if (versions.length === 0)
    throw new StrategyVersionError('STRATEGY_NOT_FOUND', `no strategy "${name}" has versions`);
  return versions;
}

async function findVersion(
  versions: readonly StrategyVersion[],
  name: string,
  number: number,
): Promise<StrategyVersion> {
  const { StrategyVersionError } = await import('../db/index.js');
  const version = versions.find((candidate) => candidate.version === number);
  if (!version) {
    throw new StrategyVersionError(
      'STRATEGY_VERSION_NOT_FOUND',
      `strategy ${name} has no version ${number} (its versions are 1 to ${versions.at(-1)?.version})`,
    );
  }
  return version;
}

function parseVersion(text: string): number {
  if (!/^[1-9]\d{0,8}$/.test(text))
    throw new CliArgumentError(`--version must be a version number such as 2 (got "${text}")`);
  return Number(text);
}

/** The declared person, who may not be the worker's own name: it records versions and never approves them. */
async function personOf(by: string | undefined): Promise<string> {
  const { AUTOMATION } = await import('../engine/index.js');
  const person = await declaredPerson(by);
  if (person.toLowerCase() === AUTOMATION)
    throw new CliArgumentError(`"${AUTOMATION}" is the worker's name, not a person who can approve`);
  return person;
}

async function withDatabase(work: (database: Database) => Promise<void>): Promise<void> {
  try {
    await withCommandDatabase(work);
  } catch (error) {
    printErrorLine(error, []);
    process.exitCode = 1;
  }
}
