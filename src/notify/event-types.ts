/**
 * The notifications the worker sends: their names are the outside contract (routes name them, receivers
 * branch on them). A plain module with no imports, so that the settings, the outbox and the hooks that
 * write events can all share the list.
 */
export const NOTIFICATION_TYPES = [
  'order_placed',
  'order_settled',
  'order_failed',
  'cycle_unsure',
  'discrepancy',
  'strategy_halted',
  'kill_switch',
  'budget_reached',
  'guard_blocked',
  'settlement_stuck',
  'approval_needed',
  'approval_decided',
  'replica_lost',
  'target_completed',
  'target_behind',
  'target_missed',
  'daily_digest',
  // Sent by `treasury-bot notify test CHANNEL` only; never routed.
  'test',
] as const;

export type NotificationType = (typeof NOTIFICATION_TYPES)[number];

export type NotificationData = { [key: string]: NotificationValue };
export type NotificationValue =
  | string
  | number
  | boolean
  | null
  | NotificationValue[]
  | { [key: string]: NotificationValue };

/** One fact to report, as the code that writes the fact describes it. Money values are decimal text. */
export interface NotificationEvent {
  type: NotificationType;
  /**
   * What the message is about (`order:<id>`, `strategy:<name>`, `kill_switch`): messages of one subject
   * reach each channel in the order they were written.
   */
  subject: string;
  occurredAt: Date;
  data: NotificationData;
  /**
   * Set for a message that must exist once however often or by however many replicas it is written (the
   * digest of a day, the first guard block of a period): a second enqueue with the same key is ignored.
   */
  key?: string;
}
