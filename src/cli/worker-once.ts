/**
 * `treasury-bot once`: one cycle of every enabled strategy (or of each one named) at one slot, the current
 * instant unless --slot names one. A slot already claimed is reported as skipped (slot_already_claimed),
 * never bought twice. Exit 0 when every cycle ended placed, skipped or dry-run; 1 otherwise.
 */
import pino from 'pino';
import { App } from '../app.js';
import { createLimiter, isOkOutcome, recordStrategiesSeen, runCycle } from '../engine/index.js';
import { loadStrategiesOrThrow, type Strategy } from '../strategy/index.js';
import { cell, printErrorLine, printJson, printLines, renderTable } from './api-output.js';

interface OnceFlags {
  strategy: string[];
  slot?: string;
  json?: boolean;
}

export class OnceArgumentError extends Error {
  override readonly name = 'OnceArgumentError';
  readonly code = 'INVALID_ARGUMENT';
}

export async function runOnceCommand(flags: OnceFlags): Promise<void> {
  let app: App | undefined;
  try {
    const slot = parseSlot(flags.slot);
    app = new App({ mode: 'once', logDestination: pino.destination({ fd: 2, sync: true }) });
    const all = await loadStrategiesOrThrow(app.settings.strategies.path);
    const selected = selectStrategies(all, flags.strategy);
    await app.start();
    const { context } = app;
    await recordStrategiesSeen(context, all);
    const at = slot ?? context.clock();
    const limiter = createLimiter(context.settings.concurrency);
    const reports = await Promise.all(
      selected.map((strategy) =>
        limiter.run(() => runCycle(context, { strategy, slot: at, trigger: 'once' })),
      ),
    );
    if (flags.json) {
      printJson({ cycles: reports }, []);
    } else {
      const columns = [
        'strategy',
        'slot',
        'outcome',
        'reason',
        'quoteId',
        'orderId',
        'price',
        'amount',
        'totalCost',
      ] as const;
      printLines(
        renderTable(
          columns,
          reports.map((report) => columns.map((column) => cell(report[column]))),
        ),
        [],
      );
    }
    process.exitCode = reports.every((report) => isOkOutcome(report.outcome)) ? 0 : 1;
  } catch (error) {
    printErrorLine(error, []);
    process.exitCode = 1;
  } finally {
    await app?.stop();
  }
}

function parseSlot(text: string | undefined): Date | undefined {
  if (text === undefined) return undefined;
  const instant = new Date(text);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(text) || Number.isNaN(instant.getTime())) {
    throw new OnceArgumentError(
      `--slot must be an ISO 8601 instant like 2025-01-31T10:00:00Z (got "${text}")`,
    );
  }
  return instant;
}

/** Named strategies in the order given (disabled ones too: naming one is an explicit request). */
function selectStrategies(all: readonly Strategy[], names: readonly string[]): Strategy[] {
  if (names.length === 0) return all.filter((strategy) => strategy.enabled);
  const unknown = names.filter((name) => !all.some((strategy) => strategy.name === name));
  if (unknown.length > 0) {
    throw new OnceArgumentError(
      `unknown strategy ${unknown.map((name) => `"${name}"`).join(', ')}; known: ${all.map((s) => s.name).join(', ')}`,
    );
  }
  return [...new Set(names)].map((name) => all.find((strategy) => strategy.name === name)!);
}
