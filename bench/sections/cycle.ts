/**
 * N sequential full cycles of a production-like DCA strategy (price cap, budgets, credit guards: balance,
 * quote, order), through the real engine against the sandbox process and PostgreSQL, and the floor of the
 * same work measured in alternating blocks in the same run. Reported: the worker's own time between the
 * quote's answer and the order request, the whole cycle, and whole-cycle median over floor median.
 */
import { type CycleReport, type CycleRequest, runCycle } from '../../src/engine/index.js';
import type { Strategy } from '../../src/strategy/index.js';
import {
  type BenchEngine,
  dcaStrategyYaml,
  loadBenchStrategies,
  openBenchEngine,
  type TimedCall,
} from '../harness/bench-engine.js';
import { formatMs, type ReportRow } from '../harness/report.js';
import type { SandboxProcess } from '../harness/sandbox-process.js';
import { startStatementCounter } from '../harness/statement-counter.js';
import { type LatencySummary, ratio, round, summarize } from '../harness/stats.js';
import { type CallSpan, medianPhases, type Phases, phaseLines, phasesOf } from './cycle-phases.js';
import {
  CALL_OF_OPERATION,
  type CycleShape,
  type CycleStep,
  deriveShape,
  describeShape,
} from './cycle-shape.js';
import { type CapturedKeys, type Floor, openFloor } from './floor.js';

export interface CycleResult {
  cycles: number;
  strategy: string;
  shape: string;
  statementsPerCycle: number;
  /** Exchanges with PostgreSQL per cycle: more than the statements when one is described before binding. */
  exchangesPerCycle: number;
  httpCallsPerCycle: number;
  outcomes: Record<string, number>;
  quoteToOrder: LatencySummary;
  whole: LatencySummary;
  floor: { quoteToOrder: LatencySummary; whole: LatencySummary };
  /**
   * CPU time of this process per cycle (user + system): the worker's own code versus the floor's. The rest
   * of a cycle is waiting on the sandbox and PostgreSQL, which run in other processes.
   */
  cpuMsPerCycle: { worker: number; floor: number };
  /** Median milliseconds of each phase of a cycle (cycle-phases.ts), worker and floor. */
  phases: { worker: Phases; floor: Phases };
  /** Whole-cycle median / floor whole-cycle median; target at most 1.25. */
  ratio: number;
  target: number;
}

const TARGET_RATIO = 1.25;
const WARM_UP_CYCLES = 50;
const SHAPE_SAMPLES = 9;
const BLOCKS = 10;
const SLOT_STEP_MS = 60_000;

export async function runCycleSection(sandbox: SandboxProcess, databaseUrl: string, cycles: number) {
  const slots = slotSequence();
  const { shape, captured } = await observeShape(sandbox, databaseUrl, slots);

  const recorder = createCallRecorder();
  const engine = await openBenchEngine({
    databaseUrl,
    apiUrl: sandbox.url,
    apiToken: sandbox.token,
    onCall: recorder.record,
  });
  const outcomes: Record<string, number> = {};
  const whole: number[] = [];
  const quoteToOrder: number[] = [];
  const floorWhole: number[] = [];
  const floorQuoteToOrder: number[] = [];
  const workerPhases: Phases[] = [];
  const floorPhases: Phases[] = [];
  let workerCpuMs = 0;
  let floorCpuMs = 0;
  let floor: Floor | undefined;
  try {
    const [strategy, floorStrategy] = await loadBenchStrategies(engine.context, [
      dcaStrategyYaml('bench-cycle'),
      dcaStrategyYaml('bench-floor'),
    ]);
    floor = await openFloor(sandbox, databaseUrl, shape, captured, {
      strategy: floorStrategy!.name,
      nextSlot: slots,
    });
    for (let i = 0; i < WARM_UP_CYCLES; i++) await timeCycle(engine, strategy!, slots, recorder);
    // Alternating blocks, so that a slow patch of the machine weighs on both sides alike.
    const perBlock = Math.max(1, Math.ceil(cycles / BLOCKS));
    for (let done = 0; done < cycles; done += perBlock) {
      const size = Math.min(perBlock, cycles - done);
      const workerCpu = process.cpuUsage();
      for (let i = 0; i < size; i++) {
        const timed = await timeCycle(engine, strategy!, slots, recorder);
        outcomes[timed.outcome] = (outcomes[timed.outcome] ?? 0) + 1;
        whole.push(timed.wholeMs);
        if (timed.quoteToOrderMs !== undefined) quoteToOrder.push(timed.quoteToOrderMs);
        workerPhases.push(phasesOf(timed.calls, timed.wholeMs));
      }
      workerCpuMs += cpuMsSince(workerCpu);
      const floorCpu = process.cpuUsage();
      const floorSamples = await floor.play(size);
      floorCpuMs += cpuMsSince(floorCpu);
      for (const sample of floorSamples) {
        floorWhole.push(sample.cycleMs);
        floorQuoteToOrder.push(sample.quoteToOrderMs);
        floorPhases.push(phasesOf(sample.calls, sample.cycleMs));
      }
    }
  } finally {
    await floor?.close();
    await engine.close();
  }
  const result: CycleResult = {
    cycles,
    strategy: 'dca with maxPrice, day and month budgets, credit guards',
    shape: describeShape(shape),
    statementsPerCycle: shape.statements,
    exchangesPerCycle: shape.exchanges,
    httpCallsPerCycle: shape.steps.filter((step) => 'http' in step).length,
    outcomes,
    quoteToOrder: summarize(quoteToOrder),
    whole: summarize(whole),
    floor: { quoteToOrder: summarize(floorQuoteToOrder), whole: summarize(floorWhole) },
    cpuMsPerCycle: { worker: round(workerCpuMs / cycles), floor: round(floorCpuMs / cycles) },
    phases: { worker: medianPhases(workerPhases), floor: medianPhases(floorPhases) },
    ratio: 0,
    target: TARGET_RATIO,
  };
  result.ratio = ratio(result.whole.p50Ms, result.floor.whole.p50Ms);
  return { result, rows: rowsOf(result) };
}

/**
 * A few cycles through the statement-counting proxy: which statements and calls a cycle makes, in which
 * order and overlap, and the keys each carried. The floor replays the most common shape.
 */
async function observeShape(
  sandbox: SandboxProcess,
  databaseUrl: string,
  slots: () => Date,
): Promise<{ shape: CycleShape; captured: CapturedKeys }> {
  const counter = await startStatementCounter(databaseUrl);
  const recorder = createCallRecorder();
  const engine = await openBenchEngine({
    databaseUrl: counter.url,
    apiUrl: sandbox.url,
    apiToken: sandbox.token,
    onCall: recorder.record,
  });
  try {
    const [strategy] = await loadBenchStrategies(engine.context, [dcaStrategyYaml('bench-shape')]);
    for (let i = 0; i < 10; i++) await timeCycle(engine, strategy!, slots, recorder);
    const samples: { shape: CycleShape; captured: CapturedKeys }[] = [];
    for (let i = 0; i < SHAPE_SAMPLES; i++) {
      counter.reset();
      recorder.reset();
      const timed = await timeCycle(engine, strategy!, slots, recorder);
      const { report } = timed;
      if (report.outcome !== 'placed' || report.quoteId === null || report.orderId === null)
        throw new Error(`shape cycle ended ${report.outcome}, expected placed`);
      samples.push({
        shape: deriveShape(counter.log(), counter.exchanges(), recorder.calls()),
        captured: {
          strategy: report.strategy,
          slot: timed.slot,
          quoteId: report.quoteId,
          serviceOrderId: report.orderId,
        },
      });
    }
    const shape = mostCommonShape(samples.map((sample) => sample.shape));
    return samples.find((sample) => sample.shape === shape)!;
  } finally {
    await engine.close();
    await counter.close();
  }
}

/**
 * The pool may hand a read to a connection that frees up a moment late, so overlap varies a little from
 * one cycle to the next, and the kill switch is re-read about once a second (an extra select now and
 * then). The floor replays the most common work, grouped as most often seen.
 */
function mostCommonShape(shapes: readonly CycleShape[]): CycleShape {
  const workOf = (shape: CycleShape) => describeShape({ ...shape, steps: shape.steps.flatMap(ungroup) });
  const commonWork = mostFrequent(shapes.map(workOf));
  const candidates = shapes.filter((shape) => workOf(shape) === commonWork);
  const commonGrouping = mostFrequent(candidates.map(describeShape));
  return candidates.find((shape) => describeShape(shape) === commonGrouping)!;
}

function mostFrequent(values: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1])[0]![0];
}

function ungroup(step: CycleStep): CycleStep[] {
  return 'sql' in step ? step.sql.map((statement) => ({ sql: [statement] })) : [step];
}

interface TimedCycle {
  outcome: string;
  report: CycleReport;
  slot: Date;
  wholeMs: number;
  quoteToOrderMs?: number;
  /** The cycle's successful HTTP calls, since it began. */
  calls: CallSpan[];
}

async function timeCycle(
  engine: BenchEngine,
  strategy: Strategy,
  slots: () => Date,
  recorder: CallRecorder,
): Promise<TimedCycle> {
  recorder.reset();
  const request: CycleRequest = { strategy, slot: slots(), trigger: 'once' };
  const began = performance.now();
  const report = await runCycle(engine.context, request);
  const wholeMs = performance.now() - began;
  const calls = recorder
    .calls()
    .filter((call) => call.ok)
    .map((call) => ({
      call: CALL_OF_OPERATION[call.operation],
      startMs: call.startAt - began,
      endMs: call.endAt - began,
    }));
  const timed = { outcome: report.outcome, report, slot: request.slot, wholeMs, calls };
  const gap = quoteToOrderGap(recorder.calls());
  return gap === undefined ? timed : { ...timed, quoteToOrderMs: gap };
}

/** From the answer of the last quote to the departure of the order request. */
function quoteToOrderGap(calls: readonly TimedCall[]): number | undefined {
  const order = calls.find((call) => call.operation === 'createOrder');
  const quote = calls.filter((call) => call.operation === 'getQuote' && call.ok).at(-1);
  return order && quote ? order.startAt - quote.endAt : undefined;
}

interface CallRecorder {
  record(call: TimedCall): void;
  calls(): readonly TimedCall[];
  reset(): void;
}

function createCallRecorder(): CallRecorder {
  let calls: TimedCall[] = [];
  return {
    record: (call) => calls.push(call),
    calls: () => calls,
    reset: () => {
      calls = [];
    },
  };
}

function cpuMsSince(start: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

/** Distinct slots, a minute apart from now on, as `once --slot` would run them. */
function slotSequence(): () => Date {
  let next = Math.ceil(Date.now() / SLOT_STEP_MS) * SLOT_STEP_MS;
  return () => {
    next += SLOT_STEP_MS;
    return new Date(next);
  };
}

function rowsOf(result: CycleResult): ReportRow[] {
  return [
    {
      section: 'cycle',
      metric: `cycles (${result.statementsPerCycle} SQL in ${result.exchangesPerCycle} round trips, ${result.httpCallsPerCycle} HTTP each)`,
      value: String(result.cycles),
    },
    {
      section: 'cycle',
      metric: 'quote->order p50 / p99',
      value: `${formatMs(result.quoteToOrder.p50Ms)} / ${formatMs(result.quoteToOrder.p99Ms)}`,
    },
    {
      section: 'cycle',
      metric: 'floor quote->order p50 / p99',
      value: `${formatMs(result.floor.quoteToOrder.p50Ms)} / ${formatMs(result.floor.quoteToOrder.p99Ms)}`,
    },
    {
      section: 'cycle',
      metric: 'whole cycle p50 / p99',
      value: `${formatMs(result.whole.p50Ms)} / ${formatMs(result.whole.p99Ms)}`,
    },
    {
      section: 'cycle',
      metric: 'floor whole p50 / p99',
      value: `${formatMs(result.floor.whole.p50Ms)} / ${formatMs(result.floor.whole.p99Ms)}`,
    },
    {
      section: 'cycle',
      metric: 'CPU of this process per cycle: worker / floor',
      value: `${formatMs(result.cpuMsPerCycle.worker)} / ${formatMs(result.cpuMsPerCycle.floor)}`,
    },
    ...phaseLines(result.phases.worker, result.phases.floor).map(({ phase, text }) => ({
      section: 'cycle',
      metric: `phase p50, worker / floor: ${phase}`,
      value: text,
    })),
    {
      section: 'cycle',
      metric: 'ratio (whole p50 / floor p50)',
      value: result.ratio.toFixed(3),
      target: `<= ${result.target}`,
      met: result.ratio <= result.target,
    },
  ];
}
