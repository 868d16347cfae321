import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ALERT_RULE_FILES } from '../../scripts/alert-rules.js';
import { problemsOf, seriesIn, workerFamilies } from './support/promql.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const read = (path: string) => readFileSync(resolve(ROOT, path), 'utf8');

interface Rule {
  alert: string;
  expr: string;
  annotations?: Record<string, string>;
}
interface Panel {
  title: string;
  targets: { expr: string }[];
}

const rules = (parse(read('deploy/prometheus/alerts.yml')) as { groups: { rules: Rule[] }[] }).groups.flatMap(
  (group) => group.rules,
);
const panels = (JSON.parse(read('deploy/grafana/treasury-bot.json')) as { panels: Panel[] }).panels;
const queries = panels.flatMap((panel) => panel.targets.map((target) => ({ panel: panel.title, ...target })));
const families = workerFamilies();

function labelsReadBy(rule: Rule): string[] {
  return Object.values(rule.annotations ?? {}).flatMap((text) =>
    [...text.matchAll(/\$labels\.(\w+)/g)].map((match) => match[1]!),
  );
}

/** The exported family of a series as queried (a histogram's `_bucket` is its family). */
function familyName(series: string): string {
  return families.has(series) ? series : series.replace(/_(bucket|count|sum)$/, '');
}

/**
 * deploy/prometheus/alerts.yml and the Grafana dashboard against the worker's own registry: a misspelt
 * series or label silently matches nothing, and an alert on it never fires.
 */
describe('alert rules and dashboard', () => {
  it('name only series and labels that the worker exports', () => {
    const problems = [
      ...rules.flatMap((rule) =>
        problemsOf(rule.expr, families, labelsReadBy(rule)).map(
          (problem) => `alert ${rule.alert}: ${problem}`,
        ),
      ),
      ...queries.flatMap((query) =>
        problemsOf(query.expr, families).map((problem) => `panel ${query.panel}: ${problem}`),
      ),
    ];
    expect(problems).toEqual([]);
  });

  it('catches a wrong series, a wrong label and a histogram queried by its bare name', () => {
    expect(problemsOf('max by (strategy) (treasury_unsure_cycles)', families)).toEqual([
      'no series in the expression has label strategy',
    ]);
    expect(problemsOf('sum(treasury_cycles_total{outcom="placed"})', families)).toEqual([
      'treasury_cycles_total has no label outcom',
    ]);
    expect(problemsOf('rate(treasury_cycle_duration_seconds[5m])', families)).toEqual([
      'unknown series treasury_cycle_duration_seconds',
    ]);
    expect(problemsOf('max(treasury_unsure_cycles)', families, ['strategy'])).toHaveLength(1);
  });

  it('alert on each condition the issue lists', () => {
    const alerted = new Set(rules.flatMap((rule) => seriesIn(rule.expr)));
    for (const series of [
      'treasury_last_successful_cycle_timestamp_seconds', // no successful cycle in the expected interval
      'treasury_strategy_interval_seconds',
      'treasury_unsure_cycles',
      'treasury_stuck_orders',
      'treasury_api_errors_total',
      'treasury_paused', // paused too long
    ])
      expect(alerted, series).toContain(series);
  });

  it('are the rules of the one table the console evaluates too (npm run alert-rules writes the files)', () => {
    expect(ALERT_RULE_FILES.map((file) => file.path)).toEqual([
      'deploy/prometheus/alerts.yml',
      'deploy/kubernetes/base/prometheus-rule.yaml',
    ]);
    for (const file of ALERT_RULE_FILES) expect(read(file.path), file.path).toBe(file.render());
  });

  it('chart every treasury series', () => {
    const charted = new Set(queries.flatMap((query) => seriesIn(query.expr).map(familyName)));
    const exported = [...families.keys()].filter((name) => name.startsWith('treasury_'));
    expect(exported.filter((name) => !charted.has(name))).toEqual([]);
  });
});
