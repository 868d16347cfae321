/**
 * The export bench's child: plain node on transpiled files (as production runs dist/), so its peak RSS is
 * the exporter's own. Opens the database as `export orders` does and writes every order to a CSV file.
 */
import { createWriteStream } from 'node:fs';
import { finished } from 'node:stream/promises';
import { EVERY_ACCOUNT, openDatabase } from '../../src/db/index.js';
import { exportOrders } from '../../src/reports/index.js';

export interface ExportRequest {
  databaseUrl: string;
  output: string;
}

export interface ExportReport {
  orders: number;
  seconds: number;
  /** CPU of the exporting process (user + system) over the same span: the figure to trust on a shared machine. */
  cpuSeconds: number;
  /** process.resourceUsage().maxRSS: the high-water mark over the whole process life. */
  peakRssMb: number;
}

process.once('message', async (message) => {
  const request = message as ExportRequest;
  const database = await openDatabase({ url: request.databaseUrl, maxConnections: 2 });
  try {
    const cpu = process.cpuUsage();
    const started = performance.now();
    const out = createWriteStream(request.output);
    const orders = await exportOrders(
      database,
      { start: new Date('2000-01-01T00:00:00Z'), end: new Date('2100-01-01T00:00:00Z') },
      out,
      { format: 'csv', scope: EVERY_ACCOUNT },
    );
    out.end();
    await finished(out);
    const used = process.cpuUsage(cpu);
    const report: ExportReport = {
      orders,
      seconds: (performance.now() - started) / 1000,
      cpuSeconds: (used.user + used.system) / 1e6,
      peakRssMb: process.resourceUsage().maxRSS / 1024,
    };
    process.send?.(report);
  } finally {
    await database.close();
    process.disconnect?.();
  }
});
