/**
 * An unsure cycle written straight to the database (claimed, quoted, submitting, unsure) for tests whose
 * service is a stand-in the cycle never talked to, and the order record such a stand-in lists for it.
 */
import type { Cycle } from '../../../src/db/index.js';
import { recordStrategiesSeen } from '../../../src/engine/index.js';
import { d, type EngineBench, strategy } from './harness.js';
import type { ListedOrder } from './listing-service.js';

export const UNSURE_PRICE = '5.4099';

export async function recordUnsureCycle(
  bench: EngineBench,
  options: { name: string; slot: Date; quoteId: string; requestedAt?: Date },
): Promise<Cycle> {
  const { database } = bench;
  await recordStrategiesSeen(bench.context, [strategy({ name: options.name })]);
  const claimed = (await database.cycles.claimSlot({
    account: 'default',
    strategy: options.name,
    slot: options.slot,
    trigger: 'once',
    owner: 'x',
  }))!;
  const at = options.requestedAt ?? new Date();
  const quote = await database.quotes.record(claimed.id, {
    quoteId: options.quoteId,
    symbol: 'USDTBRL',
    amount: strategy().amount,
    price: d(UNSURE_PRICE),
    totalCost: strategy().amount,
    totalFilled: strategy().amount,
    expiresIn: d('5'),
    requestedAt: at,
    receivedAt: at,
    deadlineAt: at,
  });
  await database.cycles.transition(claimed.id, 'claimed', 'quoted', { quote });
  await database.cycles.transition(claimed.id, 'quoted', 'submitting');
  return (await database.cycles.transition(claimed.id, 'submitting', 'unsure'))!;
}

/** An order as GET /client/orders lists it, with the figures of recordUnsureCycle's quote unless told. */
export function listedOrder(
  id: string,
  options: { quoteId: string; timestamp: Date; price?: string },
): ListedOrder {
  return {
    id,
    amount: 100,
    symbol: 'USDTBRL',
    price: options.price ?? UNSURE_PRICE,
    side: 'BUY',
    timestamp: options.timestamp.toISOString(),
    status: 'pending',
    quoteId: options.quoteId,
  };
}
