import { and, eq, sql } from 'drizzle-orm';
import type { PgUpdateSetSource } from 'drizzle-orm/pg-core';
import type { DrizzleExecutor } from '../connection.js';
import { cycles, quotes } from '../schema.js';
import { quotePlaceholders } from './quote-placeholders.js';

const p = sql.placeholder;

/**
 * The intent commit as ONE statement (quote row + move to `submitting`, a CTE), with placeholders: prepared
 * once on the pool for the hot path, or built on a transaction when the commit must wait for the strategy's
 * lock. Placeholders go through each column's encoder (money as decimal text), as in the transitions.
 */
export function buildCommitIntent(executor: DrizzleExecutor) {
  const intentQuote = executor.insert(quotes).values(quotePlaceholders('id')).returning({ id: quotes.id });
  const intentQuoteCte = executor.$with('intent_quote', { id: quotes.id }).as(intentQuote.getSQL());
  return executor
    .with(intentQuoteCte)
    .update(cycles)
    .set({
      state: 'submitting',
      quoteRecordId: sql`(select id from ${intentQuoteCte})`,
      quoteId: p('quoteId'),
      amount: p('amount'),
      price: p('price'),
      totalCost: p('totalCost'),
      trace: p('trace'),
      balanceSnapshotId: p('balanceSnapshotId'),
      reasonCode: null,
      errorCode: null,
      errorMessage: null,
      attempts: sql`${cycles.attempts} + 1`,
      submittedAt: p('now'),
      updatedAt: p('now'),
    } as unknown as PgUpdateSetSource<typeof cycles>)
    .where(and(eq(cycles.id, p('id')), eq(cycles.state, p('from'))))
    .returning();
}
