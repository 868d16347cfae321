/**
 * `npm run bench`: the sandbox in its own process, a fresh PostgreSQL database, then each section; prints
 * one table and writes bench/results.json (stable keys: generatedAt, commit, dirty, machine, knobs, and one
 * per section). The file is not committed: figures quoted in bench/README.md name the commit they ran on.
 * Knobs: see knobs.ts. Progress goes to stderr, the table to stdout.
 */
import { createBenchDatabase } from './harness/bench-database.js';
import { describeMachine, describeRevision } from './harness/machine.js';
import { printTable, type ReportRow, writeJson } from './harness/report.js';
import { startSandboxProcess } from './harness/sandbox-process.js';
import { readKnobs, type SectionName } from './knobs.js';
import { runBacktestSection } from './sections/backtest.js';
import { runBurstSection } from './sections/burst.js';
import { runReplicaBurstSection } from './sections/burst-replicas.js';
import { runCodecSection } from './sections/codec.js';
import { runConsoleSection } from './sections/console.js';
import { runCycleSection } from './sections/cycle.js';
import { runExportSection } from './sections/export.js';
import { runMemorySection } from './sections/memory.js';

const knobs = readKnobs();
const started = performance.now();
const database = await createBenchDatabase('tb_bench');
const sandbox = await startSandboxProcess();
const machine = describeMachine(database.serverVersion);
const rows: ReportRow[] = [];
const results: Record<string, unknown> = {
  generatedAt: new Date().toISOString(),
  ...describeRevision(),
  machine,
  knobs: { ...knobs, sections: [...knobs.sections] },
};

async function section<R>(name: SectionName, run: () => Promise<{ result: R; rows: ReportRow[] }>) {
  if (!knobs.sections.has(name)) return;
  const began = performance.now();
  process.stderr.write(`bench: ${name}...\n`);
  const { result, rows: sectionRows } = await run();
  results[name] = result;
  rows.push(...sectionRows);
  // A later section that fails must not lose this one's figures.
  printTable(name, sectionRows, (line) => process.stderr.write(`${line}\n`));
  process.stderr.write(`bench: ${name} done in ${((performance.now() - began) / 1000).toFixed(1)} s\n`);
}

try {
  await section('cycle', () => runCycleSection(sandbox, database.url, knobs.cycles));
  await section('burst', () => runBurstSection(sandbox, database.url, knobs.burst));
  await section('burst-latency', () =>
    runReplicaBurstSection(sandbox, database.url, {
      name: 'burst-latency',
      strategies: knobs.burstLatency,
      replicas: knobs.burstReplicas,
      latencyMs: 80,
      goals: { lastOrderMs: 5_000 },
    }),
  );
  await section('burst-10k', () =>
    runReplicaBurstSection(sandbox, database.url, {
      name: 'burst-10k',
      strategies: knobs.burst10k,
      replicas: knobs.burstReplicas,
      latencyMs: 0,
    }),
  );
  // The scale goal: all placed, none expired, the last order within 10 s, every replica within 200 MB.
  await section('burst-10k-latency', () =>
    runReplicaBurstSection(sandbox, database.url, {
      name: 'burst-10k-latency',
      strategies: knobs.burst10kLatency,
      replicas: knobs.burstReplicas,
      latencyMs: 80,
      goals: { lastOrderMs: 10_000, peakRssMb: 200 },
    }),
  );
  await section('codec', () =>
    runCodecSection(sandbox, { opMs: knobs.codecOpMs, clientMs: knobs.codecClientMs, concurrency: 16 }),
  );
  await section('memory', () =>
    runMemorySection(sandbox, database.url, {
      strategies: knobs.memoryStrategies,
      cycles: knobs.memoryCycles,
      kind: knobs.memoryKind,
    }),
  );
  await section('export', () => runExportSection(knobs.exportOrders));
  await section('backtest', () => runBacktestSection(knobs.backtestRows));
  await section('console', () => runConsoleSection(database.url, knobs.consoleCycles));
} finally {
  await sandbox.close();
  await database.drop();
}
results.durationSeconds = Math.round((performance.now() - started) / 1000);
printTable(
  `treasury-bot bench: ${machine.cores} cores (${machine.cpuModel}), node ${machine.node}, PostgreSQL ${machine.postgres}, ${results.durationSeconds} s`,
  rows,
);
await writeJson(knobs.output, results);
console.log(`\nwrote ${knobs.output}`);
