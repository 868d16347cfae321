import { Decimal, formatMoney, ZERO } from '../money.js';
import type { PriceSeries } from './price-series.js';
import type { SlotDecision } from './simulate.js';

/**
 * The backtest as a self-contained SVG: the price over the range (each column of pixels shows the lowest and
 * highest price in it), a mark at every purchase in its strategy's colour, and the cumulative spend of all
 * strategies on the right-hand axis. Nothing is fetched from another host; every text is escaped. Pixel
 * positions are numbers; prices and sums stay Decimal until they are turned into a position or a label.
 */

export interface ChartInput {
  series: PriceSeries;
  from: number;
  to: number;
  strategies: readonly string[];
  purchases: readonly SlotDecision[];
  title: string;
}

const WIDTH = 960;
const HEIGHT = 420;
const LEFT = 70;
const RIGHT = 90;
const TOP = 40;
const BOTTOM = 60;
const PLOT_W = WIDTH - LEFT - RIGHT;
const PLOT_H = HEIGHT - TOP - BOTTOM;
const COLOURS = ['#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#17becf', '#8c564b', '#e377c2', '#bcbd22'];

export function renderChart(input: ChartInput): string {
  const { series, from, to } = input;
  const span = Math.max(to - from, 1);
  const x = (instant: number) => LEFT + ((instant - from) / span) * PLOT_W;
  const columns = priceColumns(series, from, to);
  const prices = columns.flatMap((column) => [column.low, column.high]);
  for (const purchase of input.purchases) if (purchase.price) prices.push(purchase.price);
  const low = Decimal.min(...prices);
  const high = Decimal.max(...prices);
  const priceRange = high.minus(low).isZero() ? new Decimal(1) : high.minus(low);
  // Only pixel positions become numbers: the money is scaled as a Decimal to a share of the plot first.
  const y = (price: Decimal) =>
    TOP + PLOT_H - price.minus(low).dividedBy(priceRange).times(PLOT_H).toNumber();

  const totalSpent = input.purchases.reduce((sum, purchase) => sum.plus(purchase.cost ?? ZERO), ZERO);
  const spendRange = totalSpent.isZero() ? new Decimal(1) : totalSpent;
  const ySpend = (spent: Decimal) => TOP + PLOT_H - spent.dividedBy(spendRange).times(PLOT_H).toNumber();

  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="11">`,
    `<title>${escapeXml(input.title)}</title>`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="#ffffff"/>`,
    `<text x="${LEFT}" y="22" font-size="14">${escapeXml(input.title)}</text>`,
    `<rect x="${LEFT}" y="${TOP}" width="${PLOT_W}" height="${PLOT_H}" fill="none" stroke="#999"/>`,
  ];
  // Price: a vertical bar per column from its low to its high, joined into one path.
  const path = columns
    .map((column) => `M${px(x(column.at))} ${px(y(column.high))}V${px(y(column.low) + 0.5)}`)
    .join('');
  parts.push(`<path d="${path}" stroke="#1f77b4" stroke-width="1.2" fill="none"/>`);
  // Cumulative spend: a step line.
  let spent = ZERO;
  let steps = `M${px(x(from))} ${px(ySpend(ZERO))}`;
  for (const purchase of input.purchases) {
    steps += `H${px(x(purchase.slot.getTime()))}`;
    spent = spent.plus(purchase.cost ?? ZERO);
    steps += `V${px(ySpend(spent))}`;
  }
  steps += `H${px(x(to))}`;
  parts.push(`<path d="${steps}" stroke="#555" stroke-dasharray="4 3" fill="none"/>`);
  input.purchases.forEach((purchase) => {
    const colour = COLOURS[Math.max(input.strategies.indexOf(purchase.strategy), 0) % COLOURS.length];
    parts.push(
      `<circle cx="${px(x(purchase.slot.getTime()))}" cy="${px(y(purchase.price!))}" r="3" fill="${colour}"><title>${escapeXml(
        `${purchase.strategy} ${purchase.slot.toISOString()} price ${purchase.price!.toFixed()} cost ${purchase.cost!.toFixed()}`,
      )}</title></circle>`,
    );
  });
  parts.push(...axes(from, to, low, high, totalSpent, x));
  input.strategies.forEach((name, index) => {
    const lx = LEFT + index * 150;
    parts.push(
      `<circle cx="${lx + 4}" cy="${HEIGHT - 16}" r="4" fill="${COLOURS[index % COLOURS.length]}"/>`,
      `<text x="${lx + 12}" y="${HEIGHT - 12}">${escapeXml(name)}</text>`,
    );
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

interface Column {
  at: number;
  low: Decimal;
  high: Decimal;
}

/** Lowest and highest price of the rows in each pixel column of [from, to] (the row in force at `from` included). */
function priceColumns(series: PriceSeries, from: number, to: number): Column[] {
  const columns: Column[] = [];
  const span = Math.max(to - from, 1);
  let index = Math.max(series.indexAt(from), 0);
  for (let column = 0; column < PLOT_W; column++) {
    const end = from + (span * (column + 1)) / PLOT_W;
    let low = new Decimal(series.prices[index]!);
    let high = low;
    while (index + 1 < series.length && series.times[index + 1]! <= end) {
      index++;
      const price = new Decimal(series.prices[index]!);
      if (price.lessThan(low)) low = price;
      if (price.greaterThan(high)) high = price;
    }
    columns.push({ at: from + (span * column) / PLOT_W, low, high });
  }
  return columns;
}

function axes(
  from: number,
  to: number,
  low: Decimal,
  high: Decimal,
  totalSpent: Decimal,
  x: (instant: number) => number,
): string[] {
  const parts: string[] = [];
  const bottom = TOP + PLOT_H;
  parts.push(
    `<text x="${LEFT - 6}" y="${TOP + 4}" text-anchor="end">${escapeXml(formatMoney(high, 4, 'halfEven'))}</text>`,
    `<text x="${LEFT - 6}" y="${bottom}" text-anchor="end">${escapeXml(formatMoney(low, 4, 'halfEven'))}</text>`,
    `<text x="14" y="${TOP + PLOT_H / 2}" transform="rotate(-90 14 ${TOP + PLOT_H / 2})" text-anchor="middle">price</text>`,
    `<text x="${LEFT + PLOT_W + 6}" y="${TOP + 4}">${escapeXml(formatMoney(totalSpent, 2, 'halfEven'))}</text>`,
    `<text x="${LEFT + PLOT_W + 6}" y="${bottom}">0</text>`,
    `<text x="${WIDTH - 10}" y="${TOP + PLOT_H / 2}" transform="rotate(90 ${WIDTH - 10} ${TOP + PLOT_H / 2})" text-anchor="middle">cumulative spend (dashed)</text>`,
  );
  for (let tick = 0; tick <= 4; tick++) {
    const instant = from + ((to - from) * tick) / 4;
    const label = new Date(Math.round(instant)).toISOString().slice(0, 16).replace('T', ' ');
    parts.push(
      `<line x1="${px(x(instant))}" y1="${bottom}" x2="${px(x(instant))}" y2="${bottom + 4}" stroke="#999"/>`,
      `<text x="${px(x(instant))}" y="${bottom + 16}" text-anchor="middle">${escapeXml(label)}</text>`,
    );
  }
  return parts;
}

function px(value: number): string {
  return value.toFixed(1);
}

export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}
