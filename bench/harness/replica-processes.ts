/**
 * Worker replicas for the burst sections: `treasury-bot run` on plain node (transpiled, as production runs
 * dist/), each its own process on one database. A replica is ready when it logged `worker started`; its
 * other output is drained (a full pipe would stall it) and the last lines are kept for the error of a
 * replica that dies or never starts. They start one after the other: R processes recording the same 10,000
 * strategies at once wait on each other's row locks for longer than the start allows on a busy machine.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { REPOSITORY_ROOT } from './bench-engine.js';
import { profilerArgs } from './sandbox-process.js';

export interface ReplicaSpec {
  cliEntry: string;
  databaseUrl: string;
  apiUrl: string;
  apiToken: string;
  strategiesFile: string;
  settingsFile: string;
}

export interface ReplicaProcesses {
  /** Resolves once every replica logged `worker started`; rejects when one exits or the time runs out. */
  ready(timeoutMs: number): Promise<void>;
  /** SIGTERM (the graceful stop that drains cycles) and wait for every exit. */
  stop(): Promise<void>;
  /** CPU seconds the replicas used so far, user and system (Linux /proc; NaN elsewhere). */
  cpuSeconds(): Promise<number>;
}

const KEPT_LINES = 30;
const STOP_TIMEOUT_MS = 60_000;

export function startReplicas(count: number, spec: ReplicaSpec): ReplicaProcesses {
  const children: ChildProcess[] = [];
  const start = (index: number): Promise<void> => {
    const child = spawn(process.execPath, [...profilerArgs(), spec.cliEntry, 'run'], {
      cwd: REPOSITORY_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
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
    async cpuSeconds() {
      const each = await Promise.all(children.map((child) => processCpuSeconds(child.pid)));
      return each.reduce((sum, seconds) => sum + seconds, 0);
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
    },
  };
}

/** utime + stime of one process, from /proc/<pid>/stat (fields 14 and 15, in clock ticks of 1/100 s). */
async function processCpuSeconds(pid: number | undefined): Promise<number> {
  if (pid === undefined) return Number.NaN;
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces: the fields are counted after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return Number.NaN;
  }
}

/** USER_HZ, 100 on every Linux architecture Node supports. */
const CLOCK_TICKS_PER_SECOND = 100;

/** The whole machine's counters so far (Linux /proc/stat; NaN elsewhere). */
export interface MachineCounters {
  /** CPU seconds of every core spent on work of this machine's processes and kernel. */
  busySeconds: number;
  /**
   * CPU seconds the hypervisor gave to other machines while this one had work: a neighbour's load, which
   * slows a run without showing in `busySeconds`.
   */
  stealSeconds: number;
  contextSwitches: number;
}

export async function machineCounters(): Promise<MachineCounters> {
  try {
    const lines = (await readFile('/proc/stat', 'utf8')).split('\n');
    // cpu user nice system idle iowait irq softirq steal: busy is user to softirq but idle and iowait.
    const [user, nice, system, _idle, _iowait, irq, softirq, steal] = lines[0]!
      .trim()
      .split(/\s+/)
      .slice(1, 9)
      .map(Number);
    const busy = user! + nice! + system! + irq! + softirq!;
    const ctxt = lines.find((line) => line.startsWith('ctxt '));
    return {
      busySeconds: busy / CLOCK_TICKS_PER_SECOND,
      stealSeconds: steal! / CLOCK_TICKS_PER_SECOND,
      contextSwitches: ctxt === undefined ? Number.NaN : Number(ctxt.split(' ')[1]),
    };
  } catch {
    return { busySeconds: Number.NaN, stealSeconds: Number.NaN, contextSwitches: Number.NaN };
  }
}
