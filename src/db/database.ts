import { sql } from 'drizzle-orm';
import {
  type Connection,
  connectPostgres,
  type DatabaseKind,
  type ReservedConnection,
  rowsOf,
} from './connection.js';
import { type ApprovalsRepository, createApprovalsRepository } from './repositories/approvals.js';
import { type BalancesRepository, createBalancesRepository } from './repositories/balances.js';
import { type ControlRepository, createControlRepository } from './repositories/control.js';
import { type CyclesRepository, createCyclesRepository } from './repositories/cycles.js';
import {
  createNotificationsRepository,
  type NotificationRouter,
  type NotificationsRepository,
} from './repositories/notifications.js';
import { createOrdersRepository, type OrdersRepository } from './repositories/orders.js';
import { createQuotesRepository, type QuotesRepository } from './repositories/quotes.js';
import { createReplicasRepository, type ReplicasRepository } from './repositories/replicas.js';
import { createStrategiesRepository, type StrategiesRepository } from './repositories/strategies.js';
import {
  createStrategyVersionsRepository,
  type StrategyVersionsRepository,
} from './repositories/strategy-versions.js';
import {
  createWebhookEventsRepository,
  type WebhookEventsRepository,
} from './repositories/webhook-events.js';

export interface OpenDatabaseOptions {
  /** PostgreSQL connection string; when absent, embedded PGlite is used. */
  url?: string;
  /** Where embedded data lives (PGlite goes to `<dataDir>/pglite`); default ./data. */
  dataDir?: string;
  /** Embedded and in memory only: nothing is written to disk. */
  memory?: boolean;
  /** Pool size for PostgreSQL; default 10. */
  maxConnections?: number;
  /** Source of the timestamps written by repositories; default the system clock. */
  clock?: () => Date;
  /** The channels each notification type goes to (the settings' routes); default none. */
  routeNotifications?: NotificationRouter;
}

export interface Database {
  readonly kind: DatabaseKind;
  readonly strategies: StrategiesRepository;
  readonly strategyVersions: StrategyVersionsRepository;
  readonly cycles: CyclesRepository;
  readonly quotes: QuotesRepository;
  readonly orders: OrdersRepository;
  readonly webhookEvents: WebhookEventsRepository;
  readonly balances: BalancesRepository;
  readonly control: ControlRepository;
  readonly replicas: ReplicasRepository;
  readonly notifications: NotificationsRepository;
  /** Parked cycles, envelopes and the people's approvals of both (four-eyes control). */
  readonly approvals: ApprovalsRepository;
  /** Throws DatabaseError DB_UNAVAILABLE when the database does not answer. */
  ping(): Promise<void>;
  /** The database's clock (clock_timestamp()), in milliseconds since the epoch: what judges time windows. */
  clockMs(): Promise<number>;
  /**
   * Runs `work` while this process holds the session advisory lock `key` (a bigint as decimal text), on a
   * connection held for the duration; `'held_elsewhere'` without running it when another session has it.
   */
  withSessionLock<T>(key: string, work: () => Promise<T>): Promise<T | 'held_elsewhere'>;
  /** Runs `work` on one connection held for its duration (tests hold locks through it). */
  withReservedConnection<T>(work: (connection: ReservedConnection) => Promise<T>): Promise<T>;
  /** Closes the pool or the embedded instance; safe to call more than once. */
  close(): Promise<void>;
}

const connections = new WeakMap<Database, Connection>();

export async function openDatabase(options: OpenDatabaseOptions = {}): Promise<Database> {
  const connection = options.url
    ? connectPostgres(options.url, options.maxConnections ?? 10)
    : await (await import('./pglite-connection.js')).connectPglite({
        dataDir: options.dataDir,
        memory: options.memory,
      });
  return createDatabase(connection, options.clock ?? (() => new Date()), options.routeNotifications);
}

export function createDatabase(
  connection: Connection,
  clock: () => Date,
  routeNotifications: NotificationRouter = () => [],
): Database {
  const db = connection.drizzle;
  const notifications = createNotificationsRepository(db, clock, routeNotifications);
  let closing: Promise<void> | undefined;
  const database: Database = {
    kind: connection.kind,
    strategies: createStrategiesRepository(db, clock, notifications),
    strategyVersions: createStrategyVersionsRepository(db, clock, notifications),
    cycles: createCyclesRepository(connection, clock, notifications),
    quotes: createQuotesRepository(db),
    orders: createOrdersRepository(db, clock, notifications),
    webhookEvents: createWebhookEventsRepository(db, clock),
    balances: createBalancesRepository(db),
    control: createControlRepository(db, clock, notifications),
    replicas: createReplicasRepository(db, clock, notifications),
    notifications,
    approvals: createApprovalsRepository(db, clock, notifications),
    ping: () => connection.ping(),
    async clockMs() {
      const [row] = rowsOf(
        await db.execute(sql`select (extract(epoch from clock_timestamp()) * 1000)::text as ms`),
      );
      return Number(row?.ms);
    },
    withReservedConnection: (work) => connection.withReservedConnection(work),
    withSessionLock: (key, work) =>
      connection.withReservedConnection(async (session) => {
        const [row] = await session.query('select pg_try_advisory_lock($1::bigint) as locked', [key]);
        if (row?.locked !== true) return 'held_elsewhere' as const;
        try {
          return await work();
        } finally {
          await session.query('select pg_advisory_unlock($1::bigint)', [key]);
        }
      }),
    close() {
      closing ??= connection.end();
      return closing;
    },
  };
  connections.set(database, connection);
  return database;
}

/** The driver behind a Database, for the migrator and other code inside src/db. */
export function connectionOf(database: Database): Connection {
  const connection = connections.get(database);
  if (!connection) throw new TypeError('not a Database created by openDatabase()');
  return connection;
}
