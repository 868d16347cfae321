import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/observability/metrics.js';

/**
 * The conventions `promtool check metrics` enforces, checked on the whole exposition (ours and the process
 * defaults): a `_total` suffix only on counters, and every series with its HELP and TYPE. On the first
 * release prom-client's nodejs_active_handles_total, _requests_total and _resources_total were gauges.
 */
describe('metric names', () => {
  it('keeps `_total` for counters, and every metric has HELP and TYPE', async () => {
    const metrics = createMetrics({ defaultMetrics: true });
    const text = await metrics.registry.metrics();
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
  });
});
