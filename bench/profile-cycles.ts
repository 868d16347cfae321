/**
 * Worker cycles only (no floor, no other section), for a CPU profile of the worker's own code:
 *
 *   node --cpu-prof --cpu-prof-dir=.profiles --import tsx bench/profile-cycles.ts [--cycles 2000] [--dry-run]
 *   npx tsx bench/summarize-profile.ts .profiles/<largest>.cpuprofile
 */
import { parseArgs } from 'node:util';
import { runCycle } from '../src/engine/index.js';
import { createBenchDatabase } from './harness/bench-database.js';
import { dcaStrategyYaml, loadBenchStrategies, openBenchEngine } from './harness/bench-engine.js';
import { startSandboxProcess } from './harness/sandbox-process.js';

const { values } = parseArgs({
  options: { cycles: { type: 'string', default: '2000' }, 'dry-run': { type: 'boolean', default: false } },
});
const cycles = Number(values.cycles);
const database = await createBenchDatabase('tb_profile');
const sandbox = await startSandboxProcess();
const engine = await openBenchEngine({
  databaseUrl: database.url,
  apiUrl: sandbox.url,
  apiToken: sandbox.token,
});
try {
  const [strategy] = await loadBenchStrategies(engine.context, [
    dcaStrategyYaml('profile-cycle', { dryRun: values['dry-run'] }),
  ]);
  let slot = Math.ceil(Date.now() / 60_000) * 60_000;
  const outcomes: Record<string, number> = {};
  const cpu = process.cpuUsage();
  const began = performance.now();
  for (let i = 0; i < cycles; i++) {
    slot += 60_000;
    const report = await runCycle(engine.context, {
      strategy: strategy!,
      slot: new Date(slot),
      trigger: 'once',
    });
    outcomes[report.outcome] = (outcomes[report.outcome] ?? 0) + 1;
  }
  const used = process.cpuUsage(cpu);
  const wallMs = performance.now() - began;
  console.log(
    JSON.stringify({
      cycles,
      outcomes,
      wallMsPerCycle: Number((wallMs / cycles).toFixed(3)),
      cpuMsPerCycle: Number(((used.user + used.system) / 1000 / cycles).toFixed(3)),
    }),
  );
} finally {
  await engine.close();
  await sandbox.close();
  await database.drop();
}
