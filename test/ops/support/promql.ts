/**
 * Checks the series an alert rule or dashboard query names against the worker's metric registry. PromQL is
 * read with regular expressions, which is enough for our files: plain selectors and by/on/without lists.
 * A misspelt series or label does not break a query, it only makes it return nothing, so an alert on it
 * would never fire: that is what this catches.
 */
import { Histogram } from 'prom-client';
import { createMetrics } from '../../../src/observability/metrics.js';

interface Family {
  histogram: boolean;
  labels: readonly string[];
}

/** Added by Prometheus to every scraped series; `up` is the scrape's own series. */
const TARGET_LABELS = ['job', 'instance'];
const SCRAPE_SERIES = new Set(['up']);
const HISTOGRAM_SUFFIX = /_(bucket|count|sum)$/;

export function workerFamilies(): Map<string, Family> {
  const { registry } = createMetrics();
  const families = new Map<string, Family>();
  for (const metric of registry.getMetricsAsArray()) {
    // prom-client keeps the label names on the metric but leaves them out of its typings.
    const labels = (metric as unknown as { labelNames?: readonly string[] }).labelNames ?? [];
    families.set(metric.name, { histogram: metric instanceof Histogram, labels });
  }
  return families;
}

/** The worker series an expression names (histogram parts as written, e.g. `x_bucket`). */
export function seriesIn(expr: string): string[] {
  return [...new Set(expr.match(/\b(?:treasury|process|nodejs)_\w+/g) ?? [])];
}

/** Every problem with the series and labels `expr` uses; `extraLabels` are labels read elsewhere ($labels.x). */
export function problemsOf(
  expr: string,
  families: Map<string, Family>,
  extraLabels: string[] = [],
): string[] {
  const problems: string[] = [];
  const known = new Set(TARGET_LABELS);
  // A histogram is queried through its _bucket, _count and _sum series, never by its own name.
  const familyOf = (series: string): Family | undefined => {
    const exact = families.get(series);
    if (exact) return exact.histogram ? undefined : exact;
    const histogram = families.get(series.replace(HISTOGRAM_SUFFIX, ''));
    if (!histogram?.histogram) return undefined;
    return series.endsWith('_bucket') ? { ...histogram, labels: [...histogram.labels, 'le'] } : histogram;
  };
  for (const series of seriesIn(expr)) {
    const family = familyOf(series);
    if (family === undefined) problems.push(`unknown series ${series}`);
    for (const label of family?.labels ?? []) known.add(label);
  }
  for (const [, series, matchers] of expr.matchAll(/\b(\w+)\{([^}]*)\}/g)) {
    if (series === undefined || SCRAPE_SERIES.has(series)) continue;
    const labels = new Set([...TARGET_LABELS, ...(familyOf(series)?.labels ?? [])]);
    for (const [, label] of (matchers ?? '').matchAll(/(\w+)\s*(?:=~|!~|!=|=)/g))
      if (label && !labels.has(label)) problems.push(`${series} has no label ${label}`);
  }
  const grouped = [...expr.matchAll(/\b(?:by|without|on|ignoring)\s*\(([^)]*)\)/g)].flatMap(([, list]) =>
    (list ?? '').split(',').map((label) => label.trim()),
  );
  for (const label of [...grouped, ...extraLabels])
    if (label !== '' && !known.has(label)) problems.push(`no series in the expression has label ${label}`);
  return problems;
}
