/**
 * K strategies due at one instant, run by R worker replicas (`treasury-bot run` processes on plain node)
 * on one database, against the sandbox process with an optional latency per request. The strategies are
 * scheduled once a day at an instant far enough ahead for the replicas to start, so every replica's
 * node-cron fires the same slot and the unique claim splits the work, as in production.
 *
 * The figures every burst prints (placed, expired, lags, CPU per 1,000 orders, RSS per replica) are
 * burst-figures.ts's, read from outside the worker; this section adds the whole machine's CPU and context
 * switches over the same time.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { loadSettings } from '../../src/config/index.js';
import { dcaStrategyYaml } from '../harness/bench-engine.js';
import {
  type BurstGoals,
  type BurstOrders,
  burstRows,
  cpuSecondsPer1000Orders,
  readBurstOrders,
  startBurstUsage,
  type WorkerMemory,
} from '../harness/burst-figures.js';
import { containerRows, deployedContainer } from '../harness/memory-limit.js';
import { machineCounters } from '../harness/process-usage.js';
import { startReplicas } from '../harness/replica-processes.js';
import { formatMs, type ReportRow } from '../harness/report.js';
import type { SandboxProcess } from '../harness/sandbox-process.js';
import { round } from '../harness/stats.js';
import { transpileForNode } from '../harness/transpile.js';

export interface ReplicaBurstOptions {
  /** Section name, also the prefix of the strategies' names. */
  name: 'burst-latency' | 'burst-10k' | 'burst-10k-latency';
  strategies: number;
  replicas: number;
  /** Added by the sandbox to every request. */
  latencyMs: number;
  goals?: BurstGoals;
}

export interface ReplicaBurstResult extends BurstOrders {
  strategies: number;
  replicas: number;
  latencyMs: number;
  slot: string;
  cycleStates: Record<string, number>;
  /** From the slot until no cycle of the slot was in flight. */
  allFinalMs: number;
  /**
   * CPU seconds over that time: the replicas', and the whole machine's (replicas, PostgreSQL, sandbox and
   * this bench): steadier than the lags on a shared machine, and what bounds them on two cores. `steal` is
   * what the hypervisor gave to other machines meanwhile: a run with steal was slowed by a neighbour.
   */
  cpuSeconds: { replicas: number; machine: number; steal: number };
  /** The replicas' CPU seconds over that time per 1,000 orders placed. */
  cpuSecondsPer1000Orders: number;
  /** One per replica, in the order they started. */
  workerMemory: WorkerMemory[];
  /**
   * The container memory limit of deploy/kubernetes the replicas ran under (memory-limit.ts), in MiB; null
   * where the bench could not create a cgroup and they ran with the host's memory.
   */
  memoryLimitMib: number | null;
  /** The runtime's settings the replicas ran with, from the same container (memory-limit.ts). */
  runtimeEnv: Record<string, string>;
  /** Context switches of the whole machine over that time: every wake-up of a process that waited. */
  contextSwitches: number;
  goals: BurstGoals;
}

const IN_FLIGHT = ['claimed', 'quoted', 'submitting'];
const SETTLE_TIMEOUT_MS = 600_000;
/** Quote → order pairs sent to the sandbox before a burst (about 2 s on two cores). */
const SANDBOX_WARM_UP_PAIRS = 1_000;

const SETTINGS_YAML = `log:
  level: info
engine:
  reload:
    watch: false
tracking:
  backfill:
    enabled: false
  balance:
    enabled: false
  poll:
    enabled: false
`;

export async function runReplicaBurstSection(
  sandbox: SandboxProcess,
  databaseUrl: string,
  options: ReplicaBurstOptions,
) {
  // Run alone, the section would meet a sandbox that served nothing yet; in a whole run the sections before it
  // have warmed it. Either way the burst then meets a warm service, as a real one is.
  await sandbox.warm(SANDBOX_WARM_UP_PAIRS);
  const directory = await mkdtemp(join(tmpdir(), `treasury-${options.name}-`));
  const strategiesFile = join(directory, 'strategies.yaml');
  const settingsFile = join(directory, 'settings.yaml');
  const sql = postgres(databaseUrl, { max: 2, onnotice: () => {} });
  const cliEntry = await transpileForNode('src/cli.ts', 'treasury-bench-replicas');
  // Starting R processes that each parse and record K strategies takes a while on two shared cores.
  const leadMs = 20_000 + options.strategies * 8 * options.replicas;
  const slot = new Date(Math.ceil((Date.now() + leadMs) / 1000) * 1000);
  const schedule = `${slot.getUTCSeconds()} ${slot.getUTCMinutes()} ${slot.getUTCHours()} * * *`;
  const names = Array.from(
    { length: options.strategies },
    (_, i) => `${options.name}-${String(i + 1).padStart(5, '0')}`,
  );
  await writeFile(
    strategiesFile,
    names.map((name) => dcaStrategyYaml(name, { schedule, timezone: 'UTC', guards: false })).join('---\n'),
  );
  await writeFile(settingsFile, SETTINGS_YAML);
  loadSettings({ env: { TREASURY_CONFIG: settingsFile } });
  await sandbox.setFaults(options.latencyMs > 0 ? { '*': { latencyMs: options.latencyMs } } : {});
  const container = await deployedContainer();
  const replicas = startReplicas(options.replicas, {
    memoryLimitMib: container.memoryLimitMib,
    runtimeEnv: container.runtimeEnv,
    cliEntry,
    databaseUrl,
    apiUrl: sandbox.url,
    apiToken: sandbox.token,
    strategiesFile,
    settingsFile,
  });
  try {
    const untilSlot = slot.getTime() - Date.now();
    await replicas.ready(untilSlot - 1_000);
    process.stderr.write(
      `bench: ${options.name}: ${options.replicas} replicas ready; slot ${slot.toISOString()}\n`,
    );
    // The CPU count and the burst's peak RSS start at the slot: starting and loading are not the burst's.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, slot.getTime() - Date.now())));
    const machineAtSlot = await machineCounters();
    const usageAtEnd = await startBurstUsage(replicas.pids());
    const states = await waitUntilFinal(sql, options.name, slot, options.strategies);
    const allFinalMs = Date.now() - slot.getTime();
    const usage = await usageAtEnd();
    const machine = await machineCounters();
    const orders = await readBurstOrders(sql, sandbox, names, slot);
    const result: ReplicaBurstResult = {
      strategies: options.strategies,
      replicas: options.replicas,
      latencyMs: options.latencyMs,
      slot: slot.toISOString(),
      ...orders,
      cycleStates: states,
      allFinalMs,
      cpuSeconds: {
        replicas: usage.cpuSeconds,
        machine: round(machine.busySeconds - machineAtSlot.busySeconds, 2),
        steal: round(machine.stealSeconds - machineAtSlot.stealSeconds, 2),
      },
      cpuSecondsPer1000Orders: cpuSecondsPer1000Orders(usage, orders),
      workerMemory: usage.workers,
      memoryLimitMib: replicas.memoryLimitMib(),
      runtimeEnv: container.runtimeEnv,
      contextSwitches: machine.contextSwitches - machineAtSlot.contextSwitches,
      goals: options.goals ?? {},
    };
    const rows = [
      {
        section: options.name,
        metric: 'strategies due at once / replicas / sandbox latency per request',
        value: `${result.strategies} / ${result.replicas} / ${result.latencyMs} ms`,
      },
      ...containerRows(options.name, result, ' per replica'),
      ...burstRows(
        options.name,
        {
          strategies: result.strategies,
          orders,
          usage,
          states: Object.entries(states)
            .map(([state, n]) => `${n} ${state}`)
            .join(', '),
        },
        result.goals,
      ),
      ...machineRows(options.name, result),
    ];
    return { result, rows };
  } finally {
    await replicas.stop();
    await sandbox.setFaults({});
    await sql.end();
    await rm(directory, { recursive: true, force: true });
  }
}

async function waitUntilFinal(
  sql: postgres.Sql,
  prefix: string,
  slot: Date,
  expected: number,
): Promise<Record<string, number>> {
  const giveUpAt = slot.getTime() + SETTLE_TIMEOUT_MS;
  for (;;) {
    const rows = await sql<{ state: string; n: number }[]>`
      select state, count(*)::int as n from cycles
      where slot = ${slot} and strategy like ${`${prefix}-%`} group by state`;
    const states = Object.fromEntries(rows.map((row) => [row.state, row.n]));
    const total = rows.reduce((sum, row) => sum + row.n, 0);
    const inFlight = rows.filter((row) => IN_FLIGHT.includes(row.state)).length;
    if (total >= expected && inFlight === 0) return states;
    if (Date.now() > giveUpAt) {
      throw new Error(
        `${prefix}: cycles not final ${SETTLE_TIMEOUT_MS} ms after the slot: ${JSON.stringify(states)}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

function machineRows(section: string, result: ReplicaBurstResult): ReportRow[] {
  return [
    {
      section,
      metric: 'CPU from the slot until every cycle was final: replicas / whole machine / stolen',
      value: `${result.cpuSeconds.replicas} s / ${result.cpuSeconds.machine} s / ${result.cpuSeconds.steal} s (in ${formatMs(result.allFinalMs)})`,
    },
    {
      section,
      metric: 'context switches of the whole machine over the same time',
      value: result.contextSwitches.toLocaleString('en-US'),
    },
  ];
}
