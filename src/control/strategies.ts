/**
 * Strategies as people review them: each recorded strategy with its halt and every version of it (which one
 * runs, who recorded and approved each, how many lines each changed). `strategy versions` prints the
 * versions, the REST API serves the whole.
 */
import type { AccountScope, Database, StrategyRecord, StrategyVersion } from '../db/index.js';

export interface VersionSummary {
  version: number;
  state: 'running' | 'approved' | 'awaiting approval';
  linesAdded: number;
  linesRemoved: number;
  configHash: string;
  createdAt: Date;
  createdBy: string;
  approvedAt: Date | null;
  approvedBy: string | null;
}

/** What is shown of a version: everything but its text and diff, with the diff's size. */
export function versionSummary(version: StrategyVersion): VersionSummary {
  const lines = version.diff.split('\n');
  const count = (mark: '+' | '-') =>
    lines.filter((line) => line.startsWith(mark) && !line.startsWith(`${mark.repeat(3)} `)).length;
  return {
    version: version.version,
    state: version.running ? 'running' : version.approvedAt ? 'approved' : 'awaiting approval',
    linesAdded: count('+'),
    linesRemoved: count('-'),
    configHash: version.configHash,
    createdAt: version.createdAt,
    createdBy: version.createdBy,
    approvedAt: version.approvedAt,
    approvedBy: version.approvedBy,
  };
}

export interface ReviewedStrategy extends StrategyRecord {
  versions: VersionSummary[];
}

/** Every recorded strategy of the scope's accounts, by name, with its versions oldest first. */
export async function listStrategies(database: Database, scope: AccountScope): Promise<ReviewedStrategy[]> {
  const records = await database.strategies.list(scope);
  return Promise.all(
    records.map(async (record) => ({
      ...record,
      versions: (await database.strategyVersions.list(record.name)).map(versionSummary),
    })),
  );
}
