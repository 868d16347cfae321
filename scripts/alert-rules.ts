/**
 * `npm run alert-rules`: writes deploy/prometheus/alerts.yml from the rule table in
 * src/observability/alert-rules.ts, the one definition the console's "firing now" panel reads too.
 */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { renderAlertRules } from '../src/observability/alert-rules.js';

const target = resolve(import.meta.dirname, '..', 'deploy', 'prometheus', 'alerts.yml');
writeFileSync(target, renderAlertRules());
process.stdout.write(`wrote ${target}\n`);
