/**
 * The faults of a run, drawn from a seeded generator so that a failing run can be repeated: replicas
 * SIGKILLed at random instants and restarted, windows of sandbox faults, and the workers' database sessions
 * terminated server-side. Each kind runs on its own timer; stop() ends them all and clears the sandbox.
 */
import type postgres from 'postgres';
import type { FaultConfig } from '../../../src/sandbox/index.js';
import { createRng } from '../../../src/sandbox/market.js';
import type { Replica } from './replicas.js';
import { ORDER_TIMEOUT_MS } from './worker-files.js';

export interface ChaosSettings {
  seed: number;
  /** Mean time between two SIGKILLs (uniform in [0.5, 1.5] of it). */
  killEveryMs: number;
  /** A killed replica comes back after up to this long. */
  restartWithinMs: number;
  faultWindowMs: number;
  /** Quiet time between two fault windows. */
  faultGapMs: number;
  terminateEveryMs: number;
}

export interface ChaosFigures {
  kills: number;
  restarts: number;
  faultWindows: Record<FaultKind, number>;
  databaseTerminations: number;
  backendsTerminated: number;
}

export const FAULT_KINDS = ['server-errors', 'resets', 'accept-then-drop', 'slow', 'malformed'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

const MALFORMED = ['syntax', 'truncate', 'types', 'nan-price', 'negative-price'] as const;
/** What the workers' pools call themselves (src/db/connection.ts); the suite's own sessions are spared. */
const WORKER_APPLICATION_NAME = 'treasury-bot';
/** Always on: a little order latency widens the window in which a kill leaves a cycle submitting. */
const BASE_ORDER_LATENCY_MS = 25;

export interface ChaosTargets {
  replicas: Replica[];
  setFaults(faults: FaultConfig): Promise<void>;
  admin: postgres.Sql;
  databaseName: string;
}

export function startChaos(targets: ChaosTargets, settings: ChaosSettings) {
  const random = createRng(settings.seed).next;
  const figures: ChaosFigures = {
    kills: 0,
    restarts: 0,
    faultWindows: Object.fromEntries(FAULT_KINDS.map((kind) => [kind, 0])) as Record<FaultKind, number>,
    databaseTerminations: 0,
    backendsTerminated: 0,
  };
  const timers = new Set<NodeJS.Timeout>();
  const pending = new Set<Promise<unknown>>();
  let stopped = false;

  const later = (ms: number, action: () => Promise<void>) => {
    if (stopped) return;
    const timer = setTimeout(() => {
      timers.delete(timer);
      if (stopped) return;
      const work = action().catch((error: unknown) => {
        // A chaos action failing (the sandbox mid-restart, say) is reported, never fatal to the run.
        console.error(`chaos action failed: ${(error as Error).message}`);
      });
      pending.add(work);
      void work.finally(() => pending.delete(work));
    }, ms);
    timers.add(timer);
  };

  const killOne = async () => {
    const running = targets.replicas.filter((replica) => replica.running);
    const victim = running[Math.floor(random() * running.length)];
    if (victim) {
      await victim.kill();
      figures.kills++;
      later(random() * settings.restartWithinMs, async () => {
        victim.start();
        figures.restarts++;
      });
    }
    later(settings.killEveryMs * (0.5 + random()), killOne);
  };

  let windowNumber = 0;
  const openWindow = async () => {
    const kind = FAULT_KINDS[windowNumber % FAULT_KINDS.length]!;
    await targets.setFaults(faultsOf(kind, windowNumber));
    figures.faultWindows[kind]++;
    windowNumber++;
    later(settings.faultWindowMs, async () => {
      await targets.setFaults(baseFaults());
      later(settings.faultGapMs, openWindow);
    });
  };

  const terminate = async () => {
    const rows = await targets.admin<{ terminated: boolean }[]>`
      select pg_terminate_backend(pid) as terminated from pg_stat_activity
      where datname = ${targets.databaseName} and application_name = ${WORKER_APPLICATION_NAME}`;
    figures.databaseTerminations++;
    figures.backendsTerminated += rows.filter((row) => row.terminated).length;
    later(settings.terminateEveryMs * (0.5 + random()), terminate);
  };

  later(settings.killEveryMs * random(), killOne);
  later(settings.faultGapMs, openWindow);
  later(settings.terminateEveryMs * (0.5 + random()), terminate);

  return {
    figures,
    async stop(): Promise<void> {
      stopped = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      await Promise.all(pending);
      await targets.setFaults({});
    },
  };
}

function baseFaults(): FaultConfig {
  return { createOrder: { latencyMs: BASE_ORDER_LATENCY_MS } };
}

function faultsOf(kind: FaultKind, windowNumber: number): FaultConfig {
  const order = { latencyMs: BASE_ORDER_LATENCY_MS };
  switch (kind) {
    case 'server-errors':
      return { '*': { errorRate: 0.3 }, createOrder: order };
    case 'resets':
      return { '*': { resetRate: 0.3 }, createOrder: order };
    case 'accept-then-drop':
      return { createOrder: { ...order, acceptThenDropRate: 0.5 } };
    case 'slow':
      // Quotes answered after the 5-second window; order answers after the worker's order timeout.
      return {
        quote: { slowRate: 0.3, slowMs: 5_500 },
        createOrder: { ...order, slowRate: 0.3, slowMs: ORDER_TIMEOUT_MS + 1_000 },
      };
    case 'malformed':
      return {
        '*': { malformedRate: 0.3, malformed: MALFORMED[Math.floor(windowNumber / FAULT_KINDS.length) % 5]! },
        createOrder: order,
      };
  }
}
