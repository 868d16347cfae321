import { asc, eq } from 'drizzle-orm';
import type { DrizzleHandle } from '../connection.js';
import { quotes } from '../schema.js';
import type { QuoteInput, QuoteRecord } from '../types.js';
import { quotePlaceholders } from './quote-placeholders.js';

export interface QuotesRepository {
  /** Stores a quote as received, attached to the cycle that asked for it (null for operator look-ups). */
  record(cycleId: number | null, quote: QuoteInput): Promise<QuoteRecord>;
  /** Every quote a cycle received, oldest first. */
  forCycle(cycleId: number): Promise<QuoteRecord[]>;
}

function toQuote(row: typeof quotes.$inferSelect): QuoteRecord {
  return {
    id: row.id,
    cycleId: row.cycleId,
    quoteId: row.quoteId,
    symbol: row.symbol,
    amount: row.amount,
    price: row.price,
    totalCost: row.totalCost,
    totalFilled: row.totalFilled,
    expiresIn: row.expiresIn,
    requestedAt: row.requestedAt,
    receivedAt: row.receivedAt,
    deadlineAt: row.deadlineAt,
  };
}

export function createQuotesRepository(db: DrizzleHandle): QuotesRepository {
  // On the path between quote and order, inside the 5-second window: prepared once.
  const insertQuote = db
    .insert(quotes)
    .values(quotePlaceholders('cycleId'))
    .returning()
    .prepare('quotes_record');

  return {
    async record(cycleId, quote) {
      const [row] = await insertQuote.execute({ ...quote, cycleId });
      if (!row) throw new Error('insert into quotes returned no row');
      return toQuote(row);
    },

    async forCycle(cycleId) {
      const rows = await db.select().from(quotes).where(eq(quotes.cycleId, cycleId)).orderBy(asc(quotes.id));
      return rows.map(toQuote);
    },
  };
}
