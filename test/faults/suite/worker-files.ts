/**
 * The strategy and settings files the replicas of a fault run read. Strategies tick every second so that
 * kills, resets and terminated connections land in the middle of cycles; the settings shrink the engine's
 * recovery and reconciliation delays from minutes to seconds so that a short run can also prove that every
 * unsure cycle gets settled.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSettings } from '../../../src/config/index.js';

export interface WorkerFiles {
  directory: string;
  strategiesFile: string;
  settingsFile: string;
  strategyNames: string[];
  remove(): Promise<void>;
}

/** The worker's deadline for an order answer; slow faults must exceed it to make outcomes unknown. */
export const ORDER_TIMEOUT_MS = 2_500;

export async function writeWorkerFiles(strategyCount: number): Promise<WorkerFiles> {
  const directory = await mkdtemp(join(tmpdir(), 'treasury-faults-'));
  const strategyNames = Array.from({ length: strategyCount }, (_, i) => `fault-${i + 1}`);
  const strategiesFile = join(directory, 'strategies.yaml');
  const settingsFile = join(directory, 'settings.yaml');
  await writeFile(strategiesFile, strategyNames.map(strategyYaml).join('---\n'));
  await writeFile(settingsFile, SETTINGS_YAML);
  // A schema change that refuses these settings should fail here, naming the key, not as replicas that
  // die on start.
  loadSettings({ env: { TREASURY_CONFIG: settingsFile } });
  return {
    directory,
    strategiesFile,
    settingsFile,
    strategyNames,
    remove: () => rm(directory, { recursive: true, force: true }),
  };
}

/** Every other strategy reads the balance (guards), so balance faults and snapshots are in play too. */
function strategyYaml(name: string, index: number): string {
  const guards = index % 2 === 1 ? 'guards:\n  minCreditAvailable: "1000.00"\n' : '';
  return `name: ${name}\nkind: dca\nsymbol: USDTBRL\namount: "100.00"\nschedule: "* * * * * *"\ntimezone: UTC\n${guards}`;
}

const SETTINGS_YAML = `api:
  timeouts:
    connectMs: 1000
    headersMs: 3000
    bodyMs: 3000
  retry:
    maxAttempts: 2
    baseDelayMs: 50
    maxDelayMs: 200
log:
  level: warn
engine:
  orderTimeoutMs: ${ORDER_TIMEOUT_MS}
  balanceTimeoutMs: 1500
  catchUpIntervalMs: 60000
  drainTimeoutMs: 5000
  recovery:
    submittingMarginMs: 1000
    abandonAfterMs: 4000
  reconcile:
    intervalMs: 1000
    visibilityLagMs: 500
    clockSkewMs: 1000
    leaseMs: 5000
  reload:
    watch: false
tracking:
  backfill:
    enabled: false
  balance:
    enabled: false
`;
