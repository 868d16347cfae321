/**
 * Worker replicas for the burst sections: `treasury-bot run` on plain node (transpiled, as production runs
 * dist/), each its own process on one database. A replica is ready when it logged `worker started`; its
 * other output is drained (a full pipe would stall it) and the last lines are kept for the error of a
 * replica that dies or never starts. They start one after the other: R processes recording the same 10,000
 * strategies at once wait on each other's row locks for longer than the start allows on a busy machine.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { REPOSITORY_ROOT } from './bench-engine.js';
import { createMemoryLimit, insideLimit, type MemoryLimit } from './memory-limit.js';
import { profilerArgs } from './sandbox-process.js';

export interface ReplicaSpec {
  cliEntry: string;
  databaseUrl: string;
  apiUrl: string;
  apiToken: string;
  strategiesFile: string;
  settingsFile: string;
  /** A memory limit each replica starts under, in a cgroup of its own (memory-limit.ts). */
  memoryLimitMib?: number;
  /** The runtime's settings of the deployed container (NODE_OPTIONS, MALLOC_*: memory-limit.ts). */
  runtimeEnv?: Record<string, string>;
}

export interface ReplicaProcesses {
  /** Resolves once every replica logged `worker started`; rejects when one exits or the time runs out. */
  ready(timeoutMs: number): Promise<void>;
  /** SIGTERM (the graceful stop that drains cycles) and wait for every exit. */
  stop(): Promise<void>;
  /** The replicas' process ids, in the order they started (for /proc readings: process-usage.ts). */
  pids(): (number | undefined)[];
  /** The limit the replicas ran under; null when asked for none or no cgroup could be made here. */
  memoryLimitMib(): number | null;
}

const KEPT_LINES = 30;
const STOP_TIMEOUT_MS = 60_000;

export function startReplicas(count: number, spec: ReplicaSpec): ReplicaProcesses {
  const children: ChildProcess[] = [];
  const limits: MemoryLimit[] = [];
  let unlimited = spec.memoryLimitMib === undefined;
  const start = async (index: number): Promise<void> => {
    const limit =
      spec.memoryLimitMib === undefined
        ? undefined
        : await createMemoryLimit(`treasury-replica-${index + 1}`, spec.memoryLimitMib);
    if (limit) limits.push(limit);
    else unlimited = true;
    const [command, args] = insideLimit(limit, process.execPath, [...profilerArgs(), spec.cliEntry, 'run']);
    const child = spawn(command, args, {
      cwd: REPOSITORY_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        ...spec.runtimeEnv,
        DATABASE_URL: spec.databaseUrl,
        TREASURY_API_URL: spec.apiUrl,
        TREASURY_API_TOKEN: spec.apiToken,
        TREASURY_STRATEGIES: spec.strategiesFile,
        TREASURY_CONFIG: spec.settingsFile,
        TREASURY_OPS_ADDR: '127.0.0.1:0',
        TREASURY_DRY_RUN: '0',
        LOG_LEVEL: 'info',
      },
    });
    children.push(child);
    const lines: string[] = [];
    let partial = '';
    let onStarted: () => void = () => undefined;
    const isStarted = new Promise<void>((resolve) => {
      onStarted = resolve;
    });
    const keep = (chunk: Buffer) => {
      const text = partial + chunk.toString();
      const parts = text.split('\n');
      partial = parts.pop() ?? '';
      for (const line of parts) {
        if (line.includes('"worker started"')) onStarted();
        lines.push(line);
        if (lines.length > KEPT_LINES) lines.shift();
      }
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    const exited = once(child, 'exit').then(([code, signal]) => {
      throw new Error(
        `replica ${index + 1} exited (${String(code ?? signal)}) before it started:\n${lines.join('\n')}`,
      );
    });
    // Only the race below observes the exit; after the start an exit is the stop's business.
    exited.catch(() => undefined);
    return Promise.race([isStarted, exited]);
  };
  let stopping = false;
  const all = (async () => {
    for (let index = 0; index < count && !stopping; index++) await start(index);
  })();
  all.catch(() => undefined);
  return {
    async ready(timeoutMs) {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`replicas not started within ${timeoutMs} ms`)), timeoutMs);
      });
      try {
        await Promise.race([all, late]);
      } finally {
        clearTimeout(timer);
      }
    },
    pids() {
      return children.map((child) => child.pid);
    },
    memoryLimitMib() {
      return unlimited ? null : spec.memoryLimitMib!;
    },
    async stop() {
      stopping = true;
      await Promise.all(
        children.map(async (child) => {
          if (child.exitCode !== null || child.signalCode !== null) return;
          const exited = once(child, 'exit');
          child.kill('SIGTERM');
          const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
          await exited;
          clearTimeout(timer);
        }),
      );
      for (const limit of limits) await limit.remove();
    },
  };
}
