import type { FaultRunFigures } from './run-suite.js';

/** The figures of a fault run as a few readable lines, violations last. */
export function formatFigures(figures: FaultRunFigures): string {
  const lines = [
    `fault run (${figures.profile}, seed ${figures.seed}): ${figures.replicas} replicas, ${figures.strategies} strategies, ${figures.chaosSeconds} s of chaos, settled in ${figures.settleSeconds} s`,
    `  cycles                 ${figures.cycles}  ${JSON.stringify(figures.cyclesByState)}`,
    `  kills (SIGKILL)        ${figures.kills} (restarts ${figures.restarts}, unexpected exits ${figures.unexpectedReplicaExits})`,
    `  sandbox fault windows  ${JSON.stringify(figures.faultWindows)}`,
    `  db terminations        ${figures.databaseTerminations} (backends terminated ${figures.backendsTerminated})`,
    `  cycle error codes      ${JSON.stringify(figures.cycleErrors)}`,
    `  orders at the sandbox  ${figures.ordersAtSandbox}`,
    `  orders recorded        ${figures.ordersRecorded}`,
    `  duplicate orders       ${figures.duplicateOrders} (must be 0)`,
    `  unreconciled cycles    ${figures.unreconciledCycles} (must be 0)`,
    `  invariants             ${figures.violations.length === 0 ? 'all held' : `${figures.violations.length} BROKEN`}`,
  ];
  for (const violation of figures.violations) lines.push(`    - ${violation}`);
  return lines.join('\n');
}
