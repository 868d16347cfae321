import { desc, eq, sql } from 'drizzle-orm';
import type { DrizzleHandle } from '../connection.js';
import { balanceSnapshots } from '../schema.js';
import type { BalanceInput, BalanceSnapshot } from '../types.js';

export interface BalancesRepository {
  /** Stores a balance summary as read from the service, optionally as the input of a cycle's decision. */
  record(snapshot: BalanceInput): Promise<BalanceSnapshot>;
  /** The account's latest snapshot. */
  latest(account: string): Promise<BalanceSnapshot | null>;
}

function toSnapshot(row: typeof balanceSnapshots.$inferSelect): BalanceSnapshot {
  return {
    id: row.id,
    account: row.account,
    fiat: { currency: row.fiatCurrency, balance: row.fiatBalance },
    crypto: { currency: row.cryptoCurrency, balance: row.cryptoBalance },
    credit: { total: row.creditTotal, used: row.creditUsed, available: row.creditAvailable },
    canWithdraw: row.canWithdraw,
    takenAt: row.takenAt,
    cycleId: row.cycleId,
  };
}

const p = sql.placeholder;

export function createBalancesRepository(db: DrizzleHandle): BalancesRepository {
  // Recorded once per cycle that reads the balance. It answers only the id: the rest of the snapshot is the
  // values written (test/db/records.test.ts compares it with the row read back).
  const insertSnapshot = db
    .insert(balanceSnapshots)
    .values({
      account: p('account'),
      fiatCurrency: p('fiatCurrency'),
      fiatBalance: p('fiatBalance'),
      cryptoCurrency: p('cryptoCurrency'),
      cryptoBalance: p('cryptoBalance'),
      creditTotal: p('creditTotal'),
      creditUsed: p('creditUsed'),
      creditAvailable: p('creditAvailable'),
      canWithdraw: p('canWithdraw'),
      takenAt: p('takenAt'),
      cycleId: p('cycleId'),
    })
    .returning({ id: balanceSnapshots.id })
    .prepare('balances_record');
  return {
    async record(snapshot) {
      const columns = {
        account: snapshot.account,
        fiatCurrency: snapshot.fiat.currency,
        fiatBalance: snapshot.fiat.balance,
        cryptoCurrency: snapshot.crypto.currency,
        cryptoBalance: snapshot.crypto.balance,
        creditTotal: snapshot.credit.total,
        creditUsed: snapshot.credit.used,
        creditAvailable: snapshot.credit.available,
        canWithdraw: snapshot.canWithdraw,
        takenAt: snapshot.takenAt,
        cycleId: snapshot.cycleId ?? null,
      };
      const [row] = await insertSnapshot.execute(columns);
      if (!row) throw new Error('insert into balance_snapshots returned no row');
      return toSnapshot({ id: row.id, ...columns });
    },

    async latest(account) {
      const [row] = await db
        .select()
        .from(balanceSnapshots)
        .where(eq(balanceSnapshots.account, account))
        .orderBy(desc(balanceSnapshots.takenAt), desc(balanceSnapshots.id))
        .limit(1);
      return row ? toSnapshot(row) : null;
    },
  };
}
