/**
 * Transactions whose statements are built once, for the one transaction on the cycle's hot path: the intent
 * (repositories/intent.ts), inside the quote's window.
 *
 * drizzle binds a prepared statement to the handle that built it, and a transaction's handle lives for one
 * transaction, so a statement prepared inside a transaction is rendered from the query builder anew each
 * time. For the intent that was 0.37 ms of CPU for the commit and 0.21 ms for the re-read of the figures, on
 * every cycle of a strategy with budgets or credit guards: the largest cost of our own code in a cycle's
 * profile, and most of drizzle's share of a burst replica's busy time (bench/README.md, "Statements built
 * once").
 *
 * Here a drizzle handle is built, through drizzle's public constructor, over a stand-in for the driver's
 * client that sends every statement to the transaction the handle is lent to. Handles, with the statements
 * built on them, wait in a free list, made when none is free and never freed: at most as many as the driver
 * ever ran transactions at once (its pool's connections). A statement sent through a handle that is not lent,
 * or an attempt to open a transaction through it, fails loudly instead of running outside the transaction.
 * Generic over the handle (`H`, the drizzle handle in connection.ts), so this file imports nothing of ours.
 */

/** Runs `work` in a new transaction, on a handle bound to it and the statements built on that handle. */
export type StatementTransactions<H, S> = <T>(work: (tx: H, statements: S) => Promise<T>) => Promise<T>;

/** What one driver lends: its transactions, and a drizzle handle over a client that forwards to one. */
export interface TransactionLender<Tx, H> {
  begin<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
  /** A drizzle handle whose statements go to `lent()`, the transaction the handle is lent to. */
  handle(lent: () => Tx): H;
}

interface Slot<Tx, H, S> {
  lent: Tx | undefined;
  db: H;
  statements: S;
}

export function statementTransactions<Tx, H, S>(
  lender: TransactionLender<Tx, H>,
  build: (db: H) => S,
): StatementTransactions<H, S> {
  const idle: Slot<Tx, H, S>[] = [];
  const newSlot = (): Slot<Tx, H, S> => {
    const slot: Pick<Slot<Tx, H, S>, 'lent'> = { lent: undefined };
    const db = lender.handle(() => {
      if (slot.lent === undefined) {
        throw new Error('a statement ran on a transaction handle outside its transaction');
      }
      return slot.lent;
    });
    return Object.assign(slot, { db, statements: build(db) });
  };
  // The handle is taken once the driver has a connection for the transaction, not before: a burst of
  // transactions waiting for one of the pool's connections then needs no more handles than the pool has
  // connections (one on PGlite).
  return (work) =>
    lender.begin(async (tx) => {
      const slot = idle.pop() ?? newSlot();
      slot.lent = tx;
      try {
        return await work(slot.db, slot.statements);
      } finally {
        slot.lent = undefined;
        idle.push(slot);
      }
    });
}

/**
 * The stand-in for a driver's client: `forwarded` goes to the lent transaction, `refused` (the ways to open a
 * transaction or a session of one's own) throws, anything else is the client's own (the type parsers drizzle
 * installs, for instance).
 */
export function lendingClient<Client extends object, Tx>(
  client: Client,
  lent: () => Tx,
  forwarded: keyof Client & keyof Tx & string,
  refused: readonly (keyof Client & string)[],
): Client {
  const forward = (...args: unknown[]) => {
    const tx = lent();
    return (tx[forwarded] as (...args: unknown[]) => unknown).apply(tx, args);
  };
  return new Proxy(client, {
    get(target, property, receiver) {
      if (property === forwarded) return forward;
      if ((refused as readonly (string | symbol)[]).includes(property)) {
        throw new Error(`a transaction handle cannot ${String(property)}: it runs inside one transaction`);
      }
      return Reflect.get(target, property, receiver);
    },
  });
}
