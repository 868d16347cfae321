/**
 * The memory limit the replicas of a burst run under: the one deploy/kubernetes gives the worker's
 * container, applied as a Linux memory cgroup, as the kubelet applies it; and the container's settings of
 * the runtime's memory (NODE_OPTIONS, MALLOC_*), given to each replica's environment.
 *
 * Node sizes V8's heap from the memory it may use: the cgroup's limit when there is one, else the host's
 * (process.constrainedMemory()). Under the deployment's 512 MiB a replica gets a heap of about 260 MB and a
 * young generation to match; on this 24 GiB host without a limit it gets 4 GB and a young generation sized
 * for that, and holds more pages than it ever would in its pod. A burst measured without the limit would
 * report the host's RSS, not the deployment's.
 *
 * Each replica starts inside a cgroup of its own, as each pod has its own limit (a shell joins it, then execs
 * node), so V8 is configured under the limit from its first allocation. Where the bench may not create
 * cgroups, the replicas run unconstrained and the section says so.
 */
import { mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { REPOSITORY_ROOT } from './bench-engine.js';
import type { ReportRow } from './report.js';

const DEPLOYMENT = 'deploy/kubernetes/base/deployment.yaml';
const CGROUP_ROOT = '/sys/fs/cgroup';

export interface MemoryLimit {
  /** The container's memory limit in the deployment, in MiB. */
  mib: number;
  /** The cgroup.procs file a replica writes its pid into before it execs node. */
  procsFile: string;
  remove(): Promise<void>;
}

/** The worker container as deploy/kubernetes runs it: its memory limit and its runtime's settings. */
export interface DeployedContainer {
  /** `resources.limits.memory`, in MiB. */
  memoryLimitMib: number;
  /** The container's env entries that tune the runtime (RUNTIME_ENV), as given there. */
  runtimeEnv: Record<string, string>;
}

/**
 * Environment variables of the container that set how the process uses memory (V8's heap, glibc's malloc):
 * the bench starts its replicas with them, as the pod does. The rest of its env points the worker at the
 * cluster's services and files, which the bench gives its own.
 */
const RUNTIME_ENV = /^(NODE_OPTIONS|MALLOC_[A-Z_]+)$/;

/** Whether a container's variable is one of the runtime's memory settings (RUNTIME_ENV). */
export function isRuntimeEnv(name: string): boolean {
  return RUNTIME_ENV.test(name);
}

export async function deployedContainer(): Promise<DeployedContainer> {
  const text = await readFile(join(REPOSITORY_ROOT, DEPLOYMENT), 'utf8');
  return { memoryLimitMib: memoryLimitMibOf(text, DEPLOYMENT), runtimeEnv: runtimeEnvOf(text) };
}

interface ContainerSpec {
  resources?: { limits?: { memory?: unknown } };
  env?: { name?: unknown; value?: unknown }[];
}

function firstContainer(text: string): ContainerSpec | undefined {
  const deployment = parseAllDocuments(text)[0]?.toJS() as
    | { spec?: { template?: { spec?: { containers?: ContainerSpec[] } } } }
    | undefined;
  return deployment?.spec?.template?.spec?.containers?.[0];
}

/** The first container's memory limit in a Deployment's YAML, in MiB (Mi or Gi: what the manifests use). */
export function memoryLimitMibOf(text: string, file: string): number {
  const memory = firstContainer(text)?.resources?.limits?.memory;
  const match = typeof memory === 'string' ? /^(\d+)(Mi|Gi)$/.exec(memory) : null;
  if (!match) throw new Error(`${file}: expected limits.memory in Mi or Gi, got ${JSON.stringify(memory)}`);
  return Number(match[1]) * (match[2] === 'Gi' ? 1024 : 1);
}

/** The first container's runtime settings (RUNTIME_ENV) given as plain values in a Deployment's YAML. */
export function runtimeEnvOf(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const entry of firstContainer(text)?.env ?? []) {
    if (typeof entry.name === 'string' && isRuntimeEnv(entry.name) && typeof entry.value === 'string')
      env[entry.name] = entry.value;
  }
  return env;
}

/**
 * The rows a section prints about how its worker processes ran: the limit (null where no cgroup could be
 * made) and the runtime settings, `per replica` in the burst sections.
 */
export function containerRows(
  section: string,
  ran: { memoryLimitMib: number | null; runtimeEnv: Record<string, string> },
  per: string,
): ReportRow[] {
  const entries = Object.entries(ran.runtimeEnv);
  return [
    {
      section,
      metric: `memory limit${per} (deploy/kubernetes's, as a cgroup)`,
      value:
        ran.memoryLimitMib === null
          ? 'none: no cgroup could be created here; V8 sized its heap from the host memory'
          : `${ran.memoryLimitMib} MiB`,
    },
    {
      section,
      metric: `runtime settings${per} (deploy/kubernetes's env)`,
      value: entries.length === 0 ? 'none' : entries.map(([name, value]) => `${name}=${value}`).join(' '),
    },
  ];
}

/**
 * A fresh memory cgroup of `mib` under this process's own (cgroup v1 `memory` or v2), or undefined when
 * the machine does not let the bench create one.
 */
export async function createMemoryLimit(name: string, mib: number): Promise<MemoryLimit | undefined> {
  const own = await ownCgroup();
  if (own === undefined) return undefined;
  const directory = join(own.base, `${name}-${process.pid}`);
  try {
    await mkdir(directory);
  } catch {
    return undefined;
  }
  const bytes = String(mib * 1024 * 1024);
  try {
    await writeFile(join(directory, own.version === 1 ? 'memory.limit_in_bytes' : 'memory.max'), bytes);
  } catch {
    await rmdir(directory).catch(() => undefined);
    return undefined;
  }
  return {
    mib,
    procsFile: join(directory, 'cgroup.procs'),
    // Once every replica exited the cgroup is empty and can go.
    remove: () => rmdir(directory).catch(() => undefined),
  };
}

async function ownCgroup(): Promise<{ version: 1 | 2; base: string } | undefined> {
  let lines: string[];
  try {
    lines = (await readFile('/proc/self/cgroup', 'utf8')).trim().split('\n');
  } catch {
    return undefined;
  }
  const v1 = lines
    .map((line) => line.split(':'))
    .find(([, controllers]) => controllers?.split(',').includes('memory'));
  if (v1) return { version: 1, base: join(CGROUP_ROOT, 'memory', v1[2]!) };
  const v2 = lines.find((line) => line.startsWith('0::'));
  return v2 ? { version: 2, base: join(CGROUP_ROOT, v2.slice(3)) } : undefined;
}

/** The command that runs `command args` inside the limit: a shell joins the cgroup, then execs it. */
export function insideLimit(
  limit: MemoryLimit | undefined,
  command: string,
  args: string[],
): [string, string[]] {
  if (!limit) return [command, args];
  return ['/bin/sh', ['-c', 'echo $$ > "$0" && exec "$@"', limit.procsFile, command, ...args]];
}
