/**
 * The rights of the worker role (README, Database roles): every command but `migrate` runs as a role that
 * can do to each table what the code does to it and nothing more. No DELETE but on `replicas` (a clean stop
 * deletes its row) and the short-lived rows of the second factor (a reset or a new enrolment replaces a person's
 * factor and recovery codes; a login challenge is deleted once used or expired) and of the REST API's
 * idempotency keys (kept a day), no UPDATE on the append-only tables, so that even without the audit trigger the worker's
 * role cannot rewrite or remove the audit log; no DDL anywhere, so it cannot drop that trigger either.
 *
 * Applied by `treasury-bot migrate --grant-to ROLE`, run by the owner role, in the migration's transaction:
 * a table a migration adds gets its rights in the same step. A test keeps this list and the schema in step.
 */
import { sql } from 'drizzle-orm';
import { type DrizzleExecutor, rowsOf } from './connection.js';
import { DatabaseError } from './errors.js';

type Right = 'SELECT' | 'INSERT' | 'UPDATE' | 'DELETE';

const APPEND_ONLY: Right[] = ['SELECT', 'INSERT'];
const CHANGING: Right[] = ['SELECT', 'INSERT', 'UPDATE'];

/** Every table of the public schema with the worker's rights on it. */
export const WORKER_TABLE_RIGHTS: Readonly<Record<string, readonly Right[]>> = {
  strategies: CHANGING,
  strategy_versions: CHANGING,
  cycles: CHANGING,
  quotes: APPEND_ONLY,
  balance_snapshots: APPEND_ONLY,
  orders: CHANGING,
  settlement_events: APPEND_ONLY,
  webhook_events: CHANGING,
  control: CHANGING,
  replicas: [...CHANGING, 'DELETE'],
  notifications: CHANGING,
  users: CHANGING,
  console_sessions: CHANGING,
  audit_log: APPEND_ONLY,
  envelopes: CHANGING,
  approval_requests: CHANGING,
  approvals: APPEND_ONLY,
  second_factors: [...CHANGING, 'DELETE'],
  recovery_codes: [...CHANGING, 'DELETE'],
  login_challenges: [...CHANGING, 'DELETE'],
  api_tokens: CHANGING,
  // A key's first answer is kept a day, then deleted; a key whose request failed on our side is let go at once.
  api_idempotency_keys: [...CHANGING, 'DELETE'],
};

/** A PostgreSQL role name as `CREATE ROLE` takes it unquoted: it is written into statements. */
const ROLE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Why `role` cannot be granted to (the same words from `migrate --grant-to` and from here), or undefined. */
export function roleNameProblem(role: string): string | undefined {
  return ROLE_NAME.test(role)
    ? undefined
    : `--grant-to must name a role in lower case letters, digits and _ (got "${role}")`;
}

/**
 * The statements that give `role` exactly the worker's rights: whatever it held before is revoked first, so
 * a role set up under an older, wider grant is narrowed. The owner's own rights are never touched.
 */
export function workerGrantStatements(role: string): string[] {
  const problem = roleNameProblem(role);
  if (problem) throw new DatabaseError('DB_MIGRATION_FAILED', problem);
  const tables = Object.entries(WORKER_TABLE_RIGHTS).map(
    ([table, rights]) => `GRANT ${rights.join(', ')} ON TABLE public.${table} TO ${role}`,
  );
  return [
    `REVOKE ALL ON ALL TABLES IN SCHEMA public FROM ${role}`,
    `REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM ${role}`,
    `REVOKE CREATE ON SCHEMA public FROM ${role}`,
    `GRANT USAGE ON SCHEMA public TO ${role}`,
    ...tables,
    // Serial ids draw from their sequences on insert.
    `GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO ${role}`,
    // Every command checks the schema version without DDL: it reads drizzle's bookkeeping table.
    `GRANT USAGE ON SCHEMA drizzle TO ${role}`,
    `GRANT SELECT ON TABLE drizzle.__drizzle_migrations TO ${role}`,
  ];
}

/** Inside the migration's transaction, as its owner. Granting to oneself would revoke the owner's rights. */
export async function grantWorkerRights(tx: DrizzleExecutor, role: string): Promise<void> {
  const statements = workerGrantStatements(role);
  const [me] = rowsOf(await tx.execute(sql`select current_user as name`));
  if (me?.name === role) {
    throw new DatabaseError(
      'DB_MIGRATION_FAILED',
      `--grant-to names ${role}, the role migrating: the worker must run as a role of its own`,
    );
  }
  for (const statement of statements) await tx.execute(sql.raw(statement));
}
