import type { Order } from '../api/index.js';
import type { ServiceOrder } from '../db/index.js';
import { errorCodeOf, messageOf } from '../errors.js';
import type { EngineContext } from './context.js';
import type { CycleRecord } from './cycle-record.js';
import { withDatabase } from './engine-errors.js';
import { type CycleFingerprint, figureDifferences } from './order-matching.js';
import { reportDiscrepancy } from './reconcile.js';

/**
 * Records an order the service accepted: the order row and the cycle's move to `placed` in one
 * transaction. The order exists whatever happens here: when it cannot be recorded, the cycle is left for
 * reconciliation (unsure, with the order id when we still can write it), never failed.
 */
export async function recordPlacedOrder(
  context: EngineContext,
  record: CycleRecord,
  order: Order,
  asked: CycleFingerprint,
): Promise<void> {
  const { database, logger } = context;
  const serviceOrder: ServiceOrder = {
    ...order,
    account: record.cycle.account,
    quoteId: asked.quoteId,
    status: 'pending',
  };
  // An answer that is not what we asked for is still our order: recorded, flagged, the strategy halted.
  const discrepancy = figureDifferences(asked, order);
  try {
    const placed = await withDatabase(context, 'order_record', () =>
      database.orders.recordPlacedWithCycle(record.cycle.id, serviceOrder, {
        from: 'submitting',
        reasonCode: 'ok',
        discrepancy,
      }),
    );
    if (placed.cycle) {
      record.replace(placed.cycle);
      if (discrepancy.length > 0) reportDiscrepancy(context, placed.cycle, order.id, discrepancy);
      return;
    }
    // Recovery took us for dead while the answer was on its way and made the cycle unsure: adopt it.
    await record.reload();
    if (record.state === 'unsure')
      await record.move('placed', { serviceOrderId: order.id, reasonCode: 'ok' });
  } catch (error) {
    logger.error(
      { cycleId: record.cycle.id, orderId: order.id, errorCode: errorCodeOf(error), err: error },
      'order placed but not recorded; reconciliation will adopt it',
    );
    if (record.state === 'submitting') {
      await record.move('unsure', {
        serviceOrderId: order.id,
        reasonCode: 'outcome_unknown',
        errorCode: errorCodeOf(error),
        errorMessage: `order ${order.id} accepted but not recorded: ${messageOf(error)}`,
      });
      context.metrics.unsureCycles.inc();
    }
  }
}
