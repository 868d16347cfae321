/**
 * One fault run: a fresh database, the sandbox in its own process, R worker replicas as child processes,
 * chaos for a while, then calm: faults off, the kill switch on so no new order starts, and the replicas
 * (their own maintenance loops, nothing else) must bring every cycle to a final state. Then they stop
 * gracefully and the books are audited.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import postgres from 'postgres';
import { createBenchDatabase, serverUrl } from '../../../bench/harness/bench-database.js';
import { startSandboxProcess } from '../../../bench/harness/sandbox-process.js';
import { transpileForNode } from '../../../bench/harness/transpile.js';
import { type AuditFigures, auditRun } from './audit.js';
import { type ChaosFigures, startChaos } from './chaos.js';
import type { FaultProfile } from './profiles.js';
import { Replica } from './replicas.js';
import { writeWorkerFiles } from './worker-files.js';

export interface FaultRunFigures extends AuditFigures, ChaosFigures {
  profile: string;
  seed: number;
  replicas: number;
  strategies: number;
  chaosSeconds: number;
  settleSeconds: number;
  unexpectedReplicaExits: number;
  ordersWithoutSettlementHistory: number;
}

const POLL_MS = 250;

export async function runFaultSuite(
  profile: FaultProfile,
  options: { adminUrl?: string; log?: (line: string) => void } = {},
): Promise<FaultRunFigures> {
  const log = options.log ?? (() => {});
  const cliEntry = await transpileForNode('src/cli.ts', 'treasury-faults');
  const database = await createBenchDatabase('tb_faults', options.adminUrl ?? serverUrl());
  const sandbox = await startSandboxProcess({ stepMs: 1_000 });
  const files = await writeWorkerFiles(profile.strategies);
  const sql = postgres(database.url, { max: 2, onnotice: () => {} });
  const replicas = Array.from(
    { length: profile.replicas },
    (_, i) =>
      new Replica(`replica-${i + 1}`, {
        cliEntry,
        databaseUrl: database.url,
        apiUrl: sandbox.url,
        apiToken: sandbox.token,
        strategiesFile: files.strategiesFile,
        settingsFile: files.settingsFile,
      }),
  );
  try {
    for (const replica of replicas) replica.start();
    log(
      `${profile.replicas} replicas, ${profile.strategies} strategies ticking every second; chaos for ${profile.chaosMs / 1000} s (seed ${profile.chaos.seed})`,
    );
    const chaos = startChaos(
      {
        replicas,
        setFaults: (faults) => sandbox.setFaults(faults),
        admin: database.admin,
        databaseName: database.name,
      },
      profile.chaos,
    );
    await sleep(profile.chaosMs);
    await chaos.stop();
    log(`chaos over: ${JSON.stringify(chaos.figures)}`);

    const settleStarted = performance.now();
    for (const replica of replicas) replica.start();
    await pauseWorkers(cliEntry, database.url);
    await untilSettled(sql, profile.settleTimeoutMs);
    const settleSeconds = (performance.now() - settleStarted) / 1000;
    await Promise.all(replicas.map((replica) => replica.stop()));
    log(`settled in ${settleSeconds.toFixed(1)} s; replicas stopped`);

    const audit = await auditRun(sql, await sandbox.ledger());
    const [history] = await sql<{ missing: number }[]>`
      select count(*)::int as missing from orders o
      where not exists (select 1 from settlement_events e where e.order_id = o.id)`;
    const figures: FaultRunFigures = {
      profile: profile.name,
      seed: profile.chaos.seed,
      replicas: profile.replicas,
      strategies: profile.strategies,
      chaosSeconds: profile.chaosMs / 1000,
      settleSeconds: Math.round(settleSeconds * 10) / 10,
      ...chaos.figures,
      ...audit,
      unexpectedReplicaExits: replicas.reduce((sum, replica) => sum + replica.crashes.length, 0),
      ordersWithoutSettlementHistory: history!.missing,
    };
    if (figures.ordersWithoutSettlementHistory > 0)
      figures.violations.push(
        `${figures.ordersWithoutSettlementHistory} recorded orders have no settlement history`,
      );
    for (const replica of replicas) {
      for (const crash of replica.crashes)
        figures.violations.push(`${replica.name} crashed (restarted as a supervisor would): ${crash}`);
    }
    return figures;
  } finally {
    await Promise.all(replicas.map((replica) => replica.dispose()));
    await sql.end({ timeout: 5 });
    await sandbox.close();
    await database.drop();
    await files.remove();
  }
}

/** The operator's kill switch, through the command an operator would type. */
async function pauseWorkers(cliEntry: string, databaseUrl: string): Promise<void> {
  const child = spawn(process.execPath, [cliEntry, 'pause', '--reason', 'fault suite: settling'], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' },
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`treasury-bot pause exited with ${code}: ${stderr}`);
}

/**
 * Waits until no cycle is submitting or unsure, and none is claimed or quoted for longer than a live cycle
 * takes (the kill switch still lets slots be claimed, and skipped at once).
 */
async function untilSettled(sql: postgres.Sql, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    const [row] = await sql<{ open: number }[]>`
      select count(*)::int as open from cycles
      where state in ('submitting', 'unsure')
         or (state in ('claimed', 'quoted') and updated_at < now() - interval '2 seconds')`;
    if (row!.open === 0) return;
    await sleep(POLL_MS);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
