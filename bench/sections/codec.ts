/**
 * JSON versus msgpack: encode and decode operations per second for a quote and a 100-order list (the wire
 * objects the sandbox really sends), their sizes, and the client's requests per second in each format.
 */
import { request } from 'undici';
import {
  createPurchaseClient,
  decodeBody,
  encodeBody,
  mediaTypeOf,
  type WireFormat,
} from '../../src/api/index.js';
import { Decimal } from '../../src/money.js';
import { formatRate, type ReportRow } from '../harness/report.js';
import type { SandboxProcess } from '../harness/sandbox-process.js';

export interface CodecSettings {
  /** Time spent on each encode or decode measurement. */
  opMs: number;
  /** Time spent on each client throughput measurement. */
  clientMs: number;
  concurrency: number;
}

interface CodecFigures {
  bytes: number;
  encodePerSec: number;
  decodePerSec: number;
}

export interface CodecResult {
  quote: Record<WireFormat, CodecFigures>;
  orderList100: Record<WireFormat, CodecFigures>;
  clientRequestsPerSec: { quote: Record<WireFormat, number>; orderList100: Record<WireFormat, number> };
  concurrency: number;
}

const FORMATS: readonly WireFormat[] = ['json', 'msgpack'];
const LIST_SIZE = 100;

export async function runCodecSection(sandbox: SandboxProcess, settings: CodecSettings) {
  const client = createPurchaseClient({ baseUrl: sandbox.url, token: sandbox.token });
  try {
    // A list of 100 needs 100 orders at the sandbox; earlier sections may already have placed them.
    for (let placed = 0; placed < LIST_SIZE; placed++) {
      const quote = await client.getQuote({ symbol: 'USDTBRL', amount: new Decimal('100.00') });
      await client.createOrder({ quoteId: quote.quoteId });
    }
  } finally {
    await client.close();
  }
  const quoteBody = await fetchWireObject(sandbox, '/client/quote?symbols=USDTBRL&amount=2500.00');
  const listBody = await fetchWireObject(sandbox, `/client/orders?limit=${LIST_SIZE}`);

  const result: CodecResult = {
    quote: measureBoth(quoteBody, settings.opMs),
    orderList100: measureBoth(listBody, settings.opMs),
    clientRequestsPerSec: { quote: { json: 0, msgpack: 0 }, orderList100: { json: 0, msgpack: 0 } },
    concurrency: settings.concurrency,
  };
  for (const format of FORMATS) {
    const formatClient = createPurchaseClient({ baseUrl: sandbox.url, token: sandbox.token, format });
    try {
      const amount = new Decimal('2500.00');
      result.clientRequestsPerSec.quote[format] = await measureThroughput(settings, () =>
        formatClient.getQuote({ symbol: 'USDTBRL', amount }),
      );
      result.clientRequestsPerSec.orderList100[format] = await measureThroughput(settings, () =>
        formatClient.listOrders({ limit: LIST_SIZE }),
      );
    } finally {
      await formatClient.close();
    }
  }
  return { result, rows: rowsOf(result) };
}

async function fetchWireObject(sandbox: SandboxProcess, path: string): Promise<unknown> {
  const response = await request(`${sandbox.url}${path}`, {
    headers: { authorization: `Bearer ${sandbox.token}`, accept: mediaTypeOf('json') },
  });
  const body = await response.body.json();
  if (response.statusCode !== 200) throw new Error(`GET ${path} answered ${response.statusCode}`);
  return body;
}

function measureBoth(value: unknown, opMs: number): Record<WireFormat, CodecFigures> {
  const figures = {} as Record<WireFormat, CodecFigures>;
  for (const format of FORMATS) {
    const bytes = encodeBody(format, value);
    const contentType = mediaTypeOf(format);
    figures[format] = {
      bytes: bytes.length,
      encodePerSec: Math.round(countOperations(opMs, () => encodeBody(format, value))),
      decodePerSec: Math.round(countOperations(opMs, () => decodeBody(bytes, contentType, format))),
    };
  }
  return figures;
}

/** Operations per second of a synchronous operation, after a short warm-up so the JIT has settled. */
function countOperations(budgetMs: number, operation: () => unknown): number {
  const warmUpEnd = performance.now() + Math.min(200, budgetMs / 4);
  while (performance.now() < warmUpEnd) operation();
  let count = 0;
  const started = performance.now();
  let elapsed = 0;
  // The clock is read every 64 operations so that reading it does not dominate tiny operations.
  while (elapsed < budgetMs) {
    for (let i = 0; i < 64; i++) operation();
    count += 64;
    elapsed = performance.now() - started;
  }
  return (count / elapsed) * 1000;
}

async function measureThroughput(settings: CodecSettings, call: () => Promise<unknown>): Promise<number> {
  let measuring = false;
  let stop = false;
  let completed = 0;
  const worker = async () => {
    while (!stop) {
      await call();
      if (measuring) completed++;
    }
  };
  const workers = Array.from({ length: settings.concurrency }, worker);
  await new Promise((resolve) => setTimeout(resolve, 300));
  measuring = true;
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, settings.clientMs));
  measuring = false;
  const elapsed = performance.now() - started;
  stop = true;
  await Promise.all(workers);
  return Math.round((completed / elapsed) * 1000);
}

function rowsOf(result: CodecResult): ReportRow[] {
  const rows: ReportRow[] = [];
  for (const [name, figures] of [
    ['quote', result.quote],
    ['100 orders', result.orderList100],
  ] as const) {
    for (const format of FORMATS) {
      const f = figures[format];
      rows.push({
        section: 'codec',
        metric: `${name} ${format} (${f.bytes} B) encode / decode`,
        value: `${formatRate(f.encodePerSec)} / ${formatRate(f.decodePerSec)}`,
      });
    }
  }
  for (const format of FORMATS) {
    rows.push({
      section: 'codec',
      metric: `client ${format}: quote / 100-order list requests (c=${result.concurrency})`,
      value: `${formatRate(result.clientRequestsPerSec.quote[format])} / ${formatRate(result.clientRequestsPerSec.orderList100[format])}`,
    });
  }
  return rows;
}
