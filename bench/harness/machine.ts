import { execFileSync } from 'node:child_process';
import { availableParallelism, cpus, totalmem } from 'node:os';

/** Facts that make a figure comparable with another run's: always written to the results. */
export interface MachineFacts {
  cores: number;
  cpuModel: string;
  totalMemoryMb: number;
  node: string;
  platform: string;
  postgres: string | null;
}

export function describeMachine(postgresVersion: string | null): MachineFacts {
  return {
    cores: availableParallelism(),
    cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
    totalMemoryMb: Math.round(totalmem() / 2 ** 20),
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    postgres: postgresVersion,
  };
}

/**
 * The code a run measured: the commit checked out, and whether the tree differed from it (uncommitted or
 * untracked files). Written at the top of the results, so that figures are never read against another
 * commit; null outside a git checkout.
 */
export interface Revision {
  commit: string | null;
  dirty: boolean | null;
}

export function describeRevision(cwd = process.cwd()): Revision {
  const git = (...args: string[]) =>
    execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  try {
    return { commit: git('rev-parse', 'HEAD'), dirty: git('status', '--porcelain') !== '' };
  } catch {
    return { commit: null, dirty: null };
  }
}
