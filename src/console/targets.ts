/**
 * What the console shows of targets (control/targets.ts reads them): on the strategies page each running
 * target's configuration, as its running version says, and where it stands; on the overview one line each
 * with a progress bar against the straight line. Amounts in a target's measure are fiat to the cent for
 * `spend` and crypto to the micro-unit for `receive`.
 */
import { html } from 'hono/html';
import type { TargetReport } from '../control/index.js';
import { type Decimal, Rounding } from '../money.js';
import { targetBar } from './charts.js';
import { type Html, instant, money, stateBadge, table } from './layout.js';

const crypto = (value: Decimal) => value.toFixed(6);
const price = (value: Decimal | undefined) => (value ? value.toFixed(4) : '—');

/** An amount in the target's measure, with what it counts. */
function inMeasure({ measure }: TargetReport, value: Decimal): string {
  return measure === 'spend' ? `${money(value)} fiat` : `${crypto(value)} crypto`;
}

/**
 * Where the target is against the straight line while its window runs (before, the line is at zero); once
 * missed, what it is short of its total.
 */
function againstLine(report: TargetReport): Html {
  const { ahead, state, left, line } = report.standing;
  if (state === 'missed')
    return html`<strong>${inMeasure(report, left)} short</strong> when the window ended`;
  if (state !== 'active') return html`—`;
  const now = html` (the line is at ${inMeasure(report, line)} now)`;
  if (ahead.isZero()) return html`on the line${now}`;
  return html`${inMeasure(report, ahead.abs())} ${ahead.isPositive() ? 'ahead of' : 'behind'} the line${now}`;
}

// Rounded down: a target short of its total never shows 100%.
const percent = (share: Decimal) => `${share.times(100).toFixed(2, Rounding.down)}%`;

function progressBar(report: TargetReport): Html {
  const { done, total, line } = report.standing;
  return targetBar(
    `${report.name}: ${percent(report.standing.ratio)} of its target, the line at ${percent(line.div(total))}`,
    done,
    total,
    line,
  );
}

/** The id of a target's section on the strategies page, which its row links to. */
export const targetAnchor = (name: string) => `target-${name}`;

/** Every target of the page's scope: its configuration and its standing. */
export function targetSections(reports: readonly TargetReport[]): Html {
  if (reports.length === 0) return html``;
  return html`<h2>Targets</h2>
<p>Each target buys a known total within its window, a slice per slot of its schedule, paced on the straight
line from the window's start to its end. Progress is what the record says its orders spent and received.</p>
${reports.map(targetSection)}`;
}

function targetSection(report: TargetReport): Html {
  const { strategy, standing } = report;
  const { target } = strategy;
  const opportunistic = target.opportunistic
    ? `up to ${target.opportunistic.upTo.toString()}× the paced slice when a quote is at least ${target.opportunistic.belowAveragePct.toString()}% below the window's average of quotes`
    : 'off';
  return html`<section id="${targetAnchor(report.name)}">
<h3>${report.name} (account ${report.account}, version ${report.version}) ${stateBadge(standing.state)}</h3>
<table><tbody>
<tr><th scope="row">Target</th><td>${target.measure === 'spend' ? 'spend' : 'receive'} ${inMeasure(report, target.total)}</td></tr>
<tr><th scope="row">Window</th><td>${instant(target.start)} to ${instant(target.end)} (written in ${strategy.timezone})</td></tr>
<tr><th scope="row">Every</th><td><code>${strategy.schedule}</code> ${strategy.timezone}</td></tr>
<tr><th scope="row">Slice</th><td>${money(target.slice.min)} to ${money(target.slice.max)} fiat per order</td></tr>
<tr><th scope="row">Max price</th><td>${strategy.maxPrice ? strategy.maxPrice.toString() : 'none'}</td></tr>
<tr><th scope="row">Opportunistic</th><td>${opportunistic}</td></tr>
<tr><th scope="row">Done</th><td>${inMeasure(report, standing.done)} of ${inMeasure(report, standing.total)} (${percent(standing.ratio)}) ${progressBar(report)}</td></tr>
<tr><th scope="row">Spent / received</th><td>${money(standing.spent)} fiat / ${crypto(standing.received)} crypto</td></tr>
<tr><th scope="row">Against the straight line</th><td>${againstLine(report)}</td></tr>
<tr><th scope="row">Left</th><td>${inMeasure(report, standing.left)}</td></tr>
<tr><th scope="row">Average price paid / of the quotes seen</th><td>${price(standing.averagePrice)} / ${price(standing.quoteAverage)}</td></tr>
<tr><th scope="row">Projected finish</th><td>${instant(standing.projectedFinish)}</td></tr>
<tr><th scope="row">Window left</th><td>${percent(standing.windowLeft)}</td></tr>
</tbody></table>
</section>`;
}

/** The overview's lines: one a target, its progress drawn against the line. */
export function targetsOverview(reports: readonly TargetReport[]): Html {
  if (reports.length === 0) return html``;
  return html`<h2>Targets</h2>
${table(
  ['Target', 'Account', 'State', 'Progress', 'Done', 'Against the line', 'Projected finish', 'Window ends'],
  reports.map(
    (report) =>
      html`<tr><td><a href="/strategies#${targetAnchor(report.name)}">${report.name}</a></td><td>${report.account}</td><td>${stateBadge(report.standing.state)}</td>
<td>${progressBar(report)} ${percent(report.standing.ratio)}</td><td class="num">${inMeasure(report, report.standing.done)} of ${inMeasure(report, report.standing.total)}</td>
<td>${againstLine(report)}</td><td>${instant(report.standing.projectedFinish)}</td><td>${instant(report.window.end)}</td></tr>`,
  ),
  '',
)}`;
}
