import { asc, eq, sql } from 'drizzle-orm';
import type { DrizzleHandle } from '../connection.js';
import { quotes } from '../schema.js';
import type { QuoteInput, QuoteRecord } from '../types.js';

export interface QuotesRepository {
  /** Stores a quote as received, attached to the cycle that asked for it (null for operator look-ups). */
  record(cycleId: number | null, quote: QuoteInput): Promise<QuoteRecord>;
  /** Every quote a cycle received, oldest first. */
  forCycle(cycleId: number): Promise<QuoteRecord[]>;
}

const p = sql.placeholder;

/**
 * The quote row's columns as placeholders, shared by the plain quote insert and the intent commit (which
 * inserts the quote in the same statement as the move to `submitting`), so both store a quote the same way.
 * `cycleIdParam` names the placeholder carrying the cycle id in the surrounding statement.
 */
export function quotePlaceholders(cycleIdParam: string) {
  return {
    cycleId: p(cycleIdParam),
    quoteId: p('quoteId'),
    symbol: p('symbol'),
    amount: p('amount'),
    price: p('price'),
    totalCost: p('totalCost'),
    totalFilled: p('totalFilled'),
    expiresIn: p('expiresIn'),
    requestedAt: p('requestedAt'),
    receivedAt: p('receivedAt'),
    deadlineAt: p('deadlineAt'),
  };
}

/** A row is the record as it is: the table's columns are QuoteRecord's fields, of its types. */
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
      return row;
    },

    async forCycle(cycleId) {
      return db.select().from(quotes).where(eq(quotes.cycleId, cycleId)).orderBy(asc(quotes.id));
    },
  };
}
