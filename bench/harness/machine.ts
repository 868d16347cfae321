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
