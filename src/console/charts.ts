/**
 * Charts drawn on the server as SVG (no script, no request to another host): spend against a budget as a
 * bar, a target's progress against its straight line, the price paid per order over time, and a month's
 * cumulative spend against its budget. Figures stay
 * Decimal; only the final pixel positions are numbers.
 */
import { html } from 'hono/html';
import { Decimal, ZERO } from '../money.js';
import type { Html } from './layout.js';

const WIDTH = 720;
const HEIGHT = 220;
const PAD = 40;

/** Where `value` falls in [low, high], as a pixel offset along `span` pixels. */
function scale(value: Decimal, low: Decimal, high: Decimal, span: number): number {
  const range = high.minus(low);
  if (range.isZero()) return span / 2;
  return value.minus(low).div(range).times(span).toDecimalPlaces(1).toNumber();
}

/** Time is not money: plain numbers. */
function timeScale(at: Date, from: Date, until: Date, span: number): number {
  const range = until.getTime() - from.getTime();
  return range <= 0 ? span / 2 : Math.round(((at.getTime() - from.getTime()) / range) * span * 10) / 10;
}

/** A horizontal bar of `spent` against `budget` (no budget: the bar shows the amount alone). */
export function spendBar(label: string, spent: Decimal, budget: Decimal | null): Html {
  const width = 240;
  const filled = budget?.gt(0) ? Math.min(width, scale(spent, ZERO, budget, width)) : 0;
  const over = budget !== null && spent.gt(budget);
  return html`<svg class="bar" width="${width}" height="14" role="img" aria-label="${label}"><title>${label}</title><rect x="0" y="0" width="${width}" height="14" fill="#e4e7ec"/><rect x="0" y="0" width="${filled}" height="14" fill="${over ? '#c0392b' : '#2f6fdb'}"/></svg>`;
}

/** A target's progress: `done` of `total` as a bar, and a mark where the straight line stands now. */
export function targetBar(label: string, done: Decimal, total: Decimal, line: Decimal): Html {
  const width = 240;
  const filled = Math.min(width, scale(done, ZERO, total, width));
  const mark = Math.min(width - 1, scale(line, ZERO, total, width));
  return html`<svg class="bar" width="${width}" height="14" role="img" aria-label="${label}"><title>${label}</title><rect x="0" y="0" width="${width}" height="14" fill="#e4e7ec"/><rect x="0" y="0" width="${filled}" height="14" fill="#2f6fdb"/><rect x="${mark}" y="0" width="2" height="14" fill="#1d2330"/></svg>`;
}

export interface PricePoint {
  at: Date;
  price: Decimal;
}

/** Price paid per order over time, one dot an order, joined in time order. */
export function priceChart(points: readonly PricePoint[]): Html {
  if (points.length === 0) return html`<p class="empty">No orders yet.</p>`;
  const sorted = [...points].sort((a, b) => a.at.getTime() - b.at.getTime());
  const from = sorted[0]!.at;
  const until = sorted[sorted.length - 1]!.at;
  const low = Decimal.min(...sorted.map((p) => p.price));
  const high = Decimal.max(...sorted.map((p) => p.price));
  const x = (p: PricePoint) => PAD + timeScale(p.at, from, until, WIDTH - 2 * PAD);
  const y = (p: PricePoint) => HEIGHT - PAD - scale(p.price, low, high, HEIGHT - 2 * PAD);
  const line = sorted.map((p) => `${x(p)},${y(p)}`).join(' ');
  return html`<svg width="${WIDTH}" height="${HEIGHT}" role="img" aria-label="price paid per order"><title>Price paid per order</title>
<text x="4" y="${PAD - 8}" font-size="11">${high.toFixed(4)}</text>
<text x="4" y="${HEIGHT - PAD + 14}" font-size="11">${low.toFixed(4)}</text>
<text x="${PAD}" y="${HEIGHT - 8}" font-size="11">${from.toISOString().slice(0, 16)}Z</text>
<text x="${WIDTH - PAD}" y="${HEIGHT - 8}" font-size="11" text-anchor="end">${until.toISOString().slice(0, 16)}Z</text>
<polyline points="${line}" fill="none" stroke="#9bb6e8"/>
${sorted.map((p) => html`<circle cx="${x(p)}" cy="${y(p)}" r="2.5" fill="#2f6fdb"><title>${p.at.toISOString()} ${p.price.toFixed(4)}</title></circle>`)}
</svg>`;
}

export interface CostPoint {
  at: Date;
  cost: Decimal;
}

/** The running sum of a period's spend (one point a day), with the budget as a red line. */
export function cumulativeSpendChart(
  points: readonly CostPoint[],
  budget: Decimal | null,
  from: Date,
  until: Date,
): Html {
  let running = ZERO;
  const steps = points.map((p) => {
    running = running.plus(p.cost);
    return { at: p.at, total: running };
  });
  const high = Decimal.max(budget ?? ZERO, running, new Decimal(1));
  const x = (at: Date) => PAD + timeScale(at, from, until, WIDTH - 2 * PAD);
  const y = (value: Decimal) => HEIGHT - PAD - scale(value, ZERO, high, HEIGHT - 2 * PAD);
  const path = [`${x(from)},${y(ZERO)}`, ...steps.map((s) => `${x(s.at)},${y(s.total)}`)].join(' ');
  return html`<svg width="${WIDTH}" height="${HEIGHT}" role="img" aria-label="cumulative spend against budget"><title>Cumulative spend against budget</title>
<text x="4" y="${PAD - 8}" font-size="11">${high.toFixed(2)}</text>
<text x="${PAD}" y="${HEIGHT - 8}" font-size="11">${from.toISOString().slice(0, 10)}</text>
<text x="${WIDTH - PAD}" y="${HEIGHT - 8}" font-size="11" text-anchor="end">${until.toISOString().slice(0, 10)}</text>
${budget ? html`<line x1="${PAD}" x2="${WIDTH - PAD}" y1="${y(budget)}" y2="${y(budget)}" stroke="#c0392b" stroke-dasharray="4 3"><title>budget ${budget.toFixed(2)}</title></line>` : ''}
<polyline points="${path}" fill="none" stroke="#2f6fdb" stroke-width="2"/>
<text x="${WIDTH - PAD}" y="${PAD - 8}" font-size="11" text-anchor="end">spent ${running.toFixed(2)}${budget ? ` of ${budget.toFixed(2)}` : ''}</text>
</svg>`;
}
