/**
 * The audit log: what a person did, when, to what, with the state before and after. Rows are appended in
 * the same transaction as the action they describe (see console-actions.ts and people.ts), so an action
 * without its row, or a row without its action, cannot exist. The table refuses UPDATE and DELETE itself.
 */
import { and, desc, gte, lt } from 'drizzle-orm';
import type { DrizzleExecutor, DrizzleHandle } from '../connection.js';
import { toJson } from '../json.js';
import { auditLog } from '../schema.js';
import type { JsonValue } from '../types.js';

export interface AuditEntry {
  actor: string;
  action: AuditAction;
  subject: string | null;
  before?: unknown;
  after?: unknown;
}

export interface AuditRecord {
  id: number;
  at: Date;
  actor: string;
  action: string;
  subject: string | null;
  before: JsonValue | null;
  after: JsonValue | null;
}

export type AuditAction =
  | 'kill_switch.pause'
  | 'kill_switch.resume'
  | 'strategy.pause'
  | 'strategy.resume'
  | 'cycle.reconcile'
  | 'reconcile.run'
  | 'approval.approve'
  | 'approval.reject'
  | 'approval.reopen'
  | 'envelope.add'
  | 'envelope.approve'
  | 'envelope.revoke'
  | 'cycle.adopt_order'
  | 'cycle.run_once'
  | 'order.acknowledge'
  | 'strategy.version_applied'
  | 'strategy.version_approved'
  | 'user.add'
  | 'user.disable'
  | 'user.password'
  | 'user.totp_enrol'
  | 'user.totp_confirm'
  | 'user.totp_reset'
  | 'user.totp_recovery_code'
  | 'user.role'
  | 'session.login'
  | 'session.logout'
  | 'token.add'
  | 'token.revoke';

export interface AuditRepository {
  /** Newest first; `beforeId` pages backwards. */
  list(options?: { since?: Date; limit?: number; beforeId?: number }): Promise<AuditRecord[]>;
  /**
   * Appends one row on its own, for an action that is not one transaction (a manual reconciliation pass:
   * many statements over the service's order list); the row records what the pass did.
   */
  append(entry: AuditEntry): Promise<void>;
}

/** Appends one row, or several in one statement, on the caller's transaction. */
export async function appendAudit(
  executor: DrizzleExecutor,
  entries: AuditEntry | readonly AuditEntry[],
  at: Date,
): Promise<void> {
  const list = Array.isArray(entries) ? entries : [entries as AuditEntry];
  if (list.length === 0) return;
  await executor.insert(auditLog).values(
    list.map((entry) => ({
      at,
      actor: entry.actor,
      action: entry.action,
      subject: entry.subject,
      before: entry.before === undefined ? null : toJson(entry.before),
      after: entry.after === undefined ? null : toJson(entry.after),
    })),
  );
}

export function createAuditRepository(db: DrizzleHandle, clock: () => Date): AuditRepository {
  return {
    append: (entry) => appendAudit(db, entry, clock()),
    async list({ since, limit = 100, beforeId } = {}) {
      const rows = await db
        .select()
        .from(auditLog)
        .where(
          and(
            since === undefined ? undefined : gte(auditLog.at, since),
            beforeId === undefined ? undefined : lt(auditLog.id, beforeId),
          ),
        )
        .orderBy(desc(auditLog.id))
        .limit(limit);
      return rows.map((row) => ({
        id: row.id,
        at: row.at,
        actor: row.actor,
        action: row.action,
        subject: row.subject,
        before: row.before as JsonValue | null,
        after: row.after as JsonValue | null,
      }));
    },
  };
}
