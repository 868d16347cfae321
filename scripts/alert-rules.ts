/**
 * `npm run alert-rules`: writes the alert rules from the rule table in src/observability/alert-rules.ts, the
 * one definition the console's "firing now" panel reads too, in the two forms Prometheus takes them: the
 * rules file (deploy/prometheus/alerts.yml, for compose) and the Prometheus Operator's PrometheusRule
 * (deploy/kubernetes/base/prometheus-rule.yaml). Tests fail while either file differs from what this writes.
 */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderAlertRules } from '../src/observability/alert-rules.js';

const ROOT = resolve(import.meta.dirname, '..');

/** The same groups under `spec`; comments (the why of each expression) are kept. */
export function renderPrometheusRule(): string {
  const groups = renderAlertRules()
    .split('\n')
    .map((line) => (line === '' ? line : `  ${line}`))
    .join('\n');
  return [
    '# Written by `npm run alert-rules` from src/observability/alert-rules.ts; do not edit.',
    "# The Prometheus Operator loads it when the labels match its Prometheus' ruleSelector (an overlay adds them).",
    'apiVersion: monitoring.coreos.com/v1',
    'kind: PrometheusRule',
    'metadata:',
    '  name: treasury-bot',
    '  labels:',
    '    app.kubernetes.io/name: treasury-bot',
    'spec:',
    groups,
  ].join('\n');
}

/** Each generated file, by its path from the repository root, with what it must hold. */
export const ALERT_RULE_FILES: readonly { path: string; render: () => string }[] = [
  { path: 'deploy/prometheus/alerts.yml', render: renderAlertRules },
  { path: 'deploy/kubernetes/base/prometheus-rule.yaml', render: renderPrometheusRule },
];

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const file of ALERT_RULE_FILES) {
    const target = resolve(ROOT, file.path);
    writeFileSync(target, file.render());
    process.stdout.write(`wrote ${target}\n`);
  }
}
