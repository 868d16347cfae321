/**
 * `npm run test:faults`: the long fault profile. Prints the figures, writes bench/faults-results.json (with
 * the commit it ran on; the file is not committed, so no stale figures outlive their code) and
 * exits 1 when an invariant broke (each broken one is printed). Needs a PostgreSQL server (DATABASE_URL, or
 * the local one); without one it says so loudly and exits 2 rather than pretend.
 *
 *   FAULTS_PROFILE=short npm run test:faults   # the profile `npm test` runs
 */
import { availableParallelism } from 'node:os';
import { NoPostgresServerError } from '../../bench/harness/bench-database.js';
import { describeRevision } from '../../bench/harness/machine.js';
import { writeJson } from '../../bench/harness/report.js';
import { formatFigures } from './suite/figures.js';
import { LONG_PROFILE, SHORT_PROFILE } from './suite/profiles.js';
import { runFaultSuite } from './suite/run-suite.js';

const profile = process.env.FAULTS_PROFILE === 'short' ? SHORT_PROFILE : LONG_PROFILE;
const output = process.env.FAULTS_OUTPUT ?? 'bench/faults-results.json';
try {
  const figures = await runFaultSuite(profile, { log: (line) => console.log(line) });
  console.log(formatFigures(figures));
  await writeJson(output, {
    generatedAt: new Date().toISOString(),
    ...describeRevision(),
    machine: { cores: availableParallelism(), node: process.version },
    ...figures,
  });
  console.log(`wrote ${output}`);
  process.exitCode = figures.violations.length === 0 ? 0 : 1;
} catch (error) {
  if (error instanceof NoPostgresServerError) {
    console.error(
      `\n${'!'.repeat(78)}\n!!  FAULT SUITE NOT RUN: ${error.message}\n!!  It needs a PostgreSQL server (set DATABASE_URL).\n${'!'.repeat(78)}\n`,
    );
    process.exitCode = 2;
  } else {
    throw error;
  }
}
