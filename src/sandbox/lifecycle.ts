import { randomBytes } from 'node:crypto';
import { Decimal, formatMoney } from '../money.js';
import type { Order } from './ledger.js';
import { CLIENT_WALLET_ADDRESS, FIAT_CURRENCY, FIRST_BLOCK_NUMBER, HOT_WALLET_ADDRESS } from './market.js';
import { withdrawalRecord } from './records.js';
import type { WebhookEventKind } from './types.js';

export interface LifecycleEvent {
  kind: WebhookEventKind;
  data: Record<string, unknown>;
}

/**
 * Moves an order one state along pending → partial → paid → withdrawn → settled and returns the event that
 * step emits. The fiat arrives in two deposits (half, then the rest); the crypto leaves in one withdrawal
 * that is sent, then confirmed in a block.
 */
export class Lifecycle {
  private nextBlock = FIRST_BLOCK_NUMBER;

  advance(order: Order, at: number): LifecycleEvent {
    const event = this.eventFor(order, at);
    order.updatedAt = at;
    order.history.push({ status: order.status, at });
    return event;
  }

  private eventFor(order: Order, at: number): LifecycleEvent {
    switch (order.status) {
      case 'pending': {
        const half = new Decimal(formatMoney(order.totalCost.dividedBy(2), 2, 'down'));
        order.status = 'partial';
        return this.deposit(order, half, at);
      }
      case 'partial': {
        order.status = 'paid';
        return this.deposit(order, order.totalCost.minus(order.received), at);
      }
      case 'paid': {
        order.status = 'withdrawn';
        order.withdrawal = {
          transactionId: randomBytes(32).toString('hex'),
          fromAddress: HOT_WALLET_ADDRESS,
          toAddress: CLIENT_WALLET_ADDRESS,
          blockNumber: null,
          finishedAt: null,
          status: 'sent',
        };
        return { kind: 'withdrawal_crypto', data: { orderId: order.id, ...withdrawalRecord(order) } };
      }
      case 'withdrawn': {
        order.status = 'settled';
        const withdrawal = order.withdrawal!;
        withdrawal.status = 'confirmed';
        withdrawal.blockNumber = String(this.nextBlock++);
        withdrawal.finishedAt = at;
        return { kind: 'withdrawal_crypto', data: { orderId: order.id, ...withdrawalRecord(order) } };
      }
      case 'settled':
        // Callers check first; reaching this is a sandbox defect, answered as a 500.
        throw new Error(`order ${order.id} is already settled`);
    }
  }

  private deposit(order: Order, amount: Decimal, at: number): LifecycleEvent {
    order.received = order.received.plus(amount);
    return {
      kind: 'deposit_fiat',
      data: {
        orderId: order.id,
        amount: Number(formatMoney(amount, 2, 'down')),
        currency: FIAT_CURRENCY,
        receivedAt: new Date(at).toISOString(),
      },
    };
  }
}
