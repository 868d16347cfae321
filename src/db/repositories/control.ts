import { eq } from 'drizzle-orm';
import type { DrizzleHandle } from '../connection.js';
import { control } from '../schema.js';
import type { ControlState } from '../types.js';
import { killSwitchChanged, NO_OUTBOX, type Outbox } from './notification-events.js';

export interface ControlRepository {
  /** The kill switch: every replica stops placing orders while paused. */
  pause(reason: string | null, by: string): Promise<ControlState>;
  resume(by: string): Promise<ControlState>;
  /** Not paused when nobody ever touched the switch. */
  get(): Promise<ControlState>;
}

const NEVER_SET: ControlState = { paused: false, reason: null, changedAt: null, changedBy: null };

export function createControlRepository(
  db: DrizzleHandle,
  clock: () => Date,
  outbox: Outbox = NO_OUTBOX,
): ControlRepository {
  // The single row is created on first use, so an empty database needs no seed data.
  const set = async (paused: boolean, reason: string | null, by: string): Promise<ControlState> => {
    const values = { id: 1, paused, reason, changedAt: clock(), changedBy: by };
    return db.transaction(async (tx) => {
      const [row] = await tx
        .insert(control)
        .values(values)
        .onConflictDoUpdate({ target: control.id, set: values })
        .returning();
      if (!row) throw new Error('upsert into control returned no row');
      const state = {
        paused: row.paused,
        reason: row.reason,
        changedAt: row.changedAt,
        changedBy: row.changedBy,
      };
      await outbox.enqueue(tx, killSwitchChanged(state));
      return state;
    });
  };

  return {
    pause: (reason, by) => set(true, reason, by),
    resume: (by) => set(false, null, by),
    async get() {
      const [row] = await db.select().from(control).where(eq(control.id, 1));
      if (!row) return NEVER_SET;
      return { paused: row.paused, reason: row.reason, changedAt: row.changedAt, changedBy: row.changedBy };
    },
  };
}
