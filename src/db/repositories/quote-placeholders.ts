import { sql } from 'drizzle-orm';

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
