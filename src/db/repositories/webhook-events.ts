import { and, asc, eq, gte, inArray, sql } from 'drizzle-orm';
import type { DrizzleHandle } from '../connection.js';
import { toJson } from '../json.js';
import { webhookEvents } from '../schema.js';
import type {
  WebhookEventInput,
  WebhookEventRecord,
  WebhookEventStatus,
  WebhookEventToRetry,
} from '../types.js';

export interface WebhookEventsRepository {
  /**
   * Stores an incoming event once per account; a redelivery with the same dedupe key on the same account's
   * path is reported as 'duplicate'.
   */
  store(event: WebhookEventInput): Promise<'stored' | 'duplicate'>;
  markProcessed(
    account: string,
    dedupeKey: string,
    status?: Exclude<WebhookEventStatus, 'pending'>,
  ): Promise<void>;
  /** Events stored but not processed yet (e.g. the process stopped in between), oldest first. */
  listUnprocessed(limit?: number): Promise<WebhookEventRecord[]>;
  /**
   * The account's events still worth another look, oldest first: those pending (their check failed) or left as
   * unknown_order (their order may have been recorded since) that arrived at or after `since`. An older
   * one is not looked at again: it stays for review, and the order is followed by polling anyway. The
   * payload is not read: a row stored before bodies were bounded may hold one of any size.
   */
  listToRetry(account: string, since: Date, limit?: number): Promise<WebhookEventToRetry[]>;
}

function toEvent(row: typeof webhookEvents.$inferSelect): WebhookEventRecord {
  return {
    id: row.id,
    account: row.account,
    dedupeKey: row.dedupeKey,
    kind: row.kind,
    serviceOrderId: row.serviceOrderId,
    payload: toJson(row.payload),
    receivedAt: row.receivedAt,
    processedAt: row.processedAt,
    // The CHECK constraint holds status to the union.
    status: row.status as WebhookEventStatus,
  };
}

const p = sql.placeholder;

export function createWebhookEventsRepository(db: DrizzleHandle, clock: () => Date): WebhookEventsRepository {
  // The receiver answers 2xx only after this insert: prepared, as it sits on the delivery path.
  const insertEvent = db
    .insert(webhookEvents)
    .values({
      account: p('account'),
      dedupeKey: p('dedupeKey'),
      kind: p('kind'),
      serviceOrderId: p('serviceOrderId'),
      payload: p('payload'),
      receivedAt: p('receivedAt'),
    })
    .onConflictDoNothing({ target: [webhookEvents.account, webhookEvents.dedupeKey] })
    .returning({ id: webhookEvents.id })
    .prepare('webhook_events_store');

  return {
    async store(event) {
      const rows = await insertEvent.execute({ ...event, payload: toJson(event.payload) });
      return rows.length > 0 ? 'stored' : 'duplicate';
    },

    async markProcessed(account, dedupeKey, status = 'processed') {
      await db
        .update(webhookEvents)
        .set({ status, processedAt: clock() })
        .where(and(eq(webhookEvents.account, account), eq(webhookEvents.dedupeKey, dedupeKey)));
    },

    async listUnprocessed(limit = 100) {
      const rows = await db
        .select()
        .from(webhookEvents)
        .where(eq(webhookEvents.status, 'pending'))
        .orderBy(asc(webhookEvents.receivedAt), asc(webhookEvents.id))
        .limit(limit);
      return rows.map(toEvent);
    },

    async listToRetry(account, since, limit = 100) {
      const rows = await db
        .select({
          id: webhookEvents.id,
          account: webhookEvents.account,
          dedupeKey: webhookEvents.dedupeKey,
          kind: webhookEvents.kind,
          serviceOrderId: webhookEvents.serviceOrderId,
          receivedAt: webhookEvents.receivedAt,
          processedAt: webhookEvents.processedAt,
          status: webhookEvents.status,
        })
        .from(webhookEvents)
        .where(
          and(
            eq(webhookEvents.account, account),
            inArray(webhookEvents.status, ['pending', 'unknown_order']),
            gte(webhookEvents.receivedAt, since),
          ),
        )
        .orderBy(asc(webhookEvents.receivedAt), asc(webhookEvents.id))
        .limit(limit);
      // The CHECK constraint holds status to the union.
      return rows.map((row) => ({ ...row, status: row.status as WebhookEventStatus }));
    },
  };
}
