import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/observability/metrics.js';

/**
 * The conventions `promtool check metrics` enforces, checked on the whole exposition (ours and the process
 * defaults): a `_total` suffix only on counters, and every series with its HELP and TYPE. On the first
 * release prom-client's nodejs_active_handles_total, _requests_total and _resources_total were gauges.
 */

/** Runs `promtool check metrics` on the text; undefined when promtool is not installed. */
function promtool(exposition: string): { code: number | null; output: string } | undefined {
  const run = spawnSync('promtool', ['check', 'metrics'], { input: exposition, encoding: 'utf8' });
  if (run.error) return undefined;
  return { code: run.status, output: `${run.stdout}${run.stderr}`.trim() };
}

const promtoolInstalled = promtool('') !== undefined;
if (!promtoolInstalled) {
  process.stderr.write(
    '\n!!! metric-names.test.ts: promtool check SKIPPED: promtool is not installed (apt-get install prometheus)\n\n',
  );
}

async function exposition(): Promise<string> {
  return createMetrics({ defaultMetrics: true }).registry.metrics();
}

describe('metric names', () => {
  it('keeps `_total` for counters, and every metric has HELP and TYPE', async () => {
    const text = await exposition();
    const types = new Map(
      [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map(([, name, type]) => [name!, type!]),
    );
    const helps = new Set([...text.matchAll(/^# HELP (\S+) /gm)].map(([, name]) => name!));
    expect(types.size).toBeGreaterThan(20);
    for (const [name, type] of types) {
      if (name.endsWith('_total')) expect(type, name).toBe('counter');
      expect(helps.has(name), name).toBe(true);
    }
    expect(types.get('nodejs_active_resources')).toBe('gauge');
    expect(text).toMatch(/^nodejs_active_resources\{type="\w+"\} \d+$/m);
    // The process metrics stay.
    expect(types.get('process_cpu_seconds_total')).toBe('counter');
    expect(types.get('process_resident_memory_bytes')).toBe('gauge');
  });

  it.skipIf(!promtoolInstalled)('passes promtool check metrics without a complaint', async () => {
    // promtool does flag the first release's mistake, so a clean run below means something.
    const misnamed =
      '# HELP nodejs_active_handles_total x\n# TYPE nodejs_active_handles_total gauge\nnodejs_active_handles_total 1\n';
    expect(promtool(misnamed)?.output).toMatch(/non-counter metrics should not have "_total" suffix/);

    expect(promtool(await exposition())).toEqual({ code: 0, output: '' });
  });
});
