import { describe, expect, it } from 'vitest';
import { setStrategyIntervals } from '../../src/engine/strategy-records.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { metricValue, strategy } from './support/harness.js';

describe('treasury_strategy_interval_seconds', () => {
  it('is the longest gap between slots in the coming week; disabled strategies have none', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    setStrategyIntervals(
      metrics,
      [
        strategy({ name: 'weekdays', schedule: '0 10 * * 1-5', timezone: 'America/Sao_Paulo' }),
        strategy({ name: 'every-15s', schedule: '*/15 * * * * *' }),
        strategy({ name: 'off', enabled: false }),
      ],
      new Date('2030-07-03T12:00:00Z'), // a Wednesday
    );
    // Friday 10:00 to Monday 10:00.
    expect(await metricValue(metrics, 'treasury_strategy_interval_seconds', { strategy: 'weekdays' })).toBe(
      259_200,
    );
    expect(await metricValue(metrics, 'treasury_strategy_interval_seconds', { strategy: 'every-15s' })).toBe(
      15,
    );
    const all = await metrics.registry.getSingleMetric('treasury_strategy_interval_seconds')!.get();
    expect(all.values.map((value) => value.labels.strategy)).not.toContain('off');
  });
});
