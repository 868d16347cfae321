/**
 * Group commit: calls of one statement that arrive while one is in flight wait for it and then go together,
 * as ONE statement over all of them. In a burst (thousands of strategies due at one instant) most of a
 * cycle's CPU went to sending its statements one by one: on loopback, a socket write to PostgreSQL costs
 * the sender the receiver's network work too, and each statement pays its own bind, parse and row mapping
 * on both sides (bench/README.md, "Group commit"). A call that finds nothing in flight goes at once, alone,
 * on the statement it always took: a single due strategy waits for nothing.
 *
 * Each call keeps its own outcome: the batch answers one result per input, in order. A batch is one statement
 * or one transaction, all or nothing: when it fails, every call in it fails with the same error, which each
 * caller handles as the failure of its own statement (whether it landed unknown, as with a single one). Which
 * calls may share a statement is the user's rule (`fits`): the same row twice, or two decisions where the
 * second must see the first, go one after the other. Generic, so this file imports nothing of ours.
 */
export interface GroupCommitOptions<In, Out> {
  /** The statement for one call: the path a call takes when it finds nothing in flight. */
  one(input: In): Promise<Out>;
  /** The statement for several calls, answering one result per input in their order. */
  many(inputs: readonly In[]): Promise<Out[]>;
  /** The most calls one statement carries; the rest go in the next. */
  maxBatch: number;
  /**
   * Whether `next` may go in one statement with the calls already taken (default: always). A call that does
   * not fit waits, in its turn, for a later statement; the first call waiting always goes.
   */
  fits?(taken: readonly In[], next: In): boolean;
}

interface Waiting<In, Out> {
  input: In;
  resolve(value: Out): void;
  reject(reason: unknown): void;
}

export class GroupCommit<In, Out> {
  private waiting: Waiting<In, Out>[] = [];
  private inFlight = false;

  constructor(private readonly options: GroupCommitOptions<In, Out>) {
    if (!Number.isInteger(options.maxBatch) || options.maxBatch < 1)
      throw new RangeError('maxBatch must be a positive integer');
  }

  run(input: In): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      this.waiting.push({ input, resolve, reject });
      if (!this.inFlight) this.send();
    });
  }

  private send(): void {
    const batch = this.nextBatch();
    if (batch.length === 0) return;
    this.inFlight = true;
    this.settle(batch).finally(() => {
      this.inFlight = false;
      this.send();
    });
  }

  /** The calls of the next statement, in the order they came; those left out keep theirs. */
  private nextBatch(): Waiting<In, Out>[] {
    const { maxBatch, fits } = this.options;
    if (!fits) return this.waiting.splice(0, maxBatch);
    const taken: Waiting<In, Out>[] = [];
    const inputs: In[] = [];
    const left: Waiting<In, Out>[] = [];
    for (const call of this.waiting) {
      if (taken.length < maxBatch && (taken.length === 0 || fits(inputs, call.input))) {
        taken.push(call);
        inputs.push(call.input);
      } else left.push(call);
    }
    this.waiting = left;
    return taken;
  }

  private async settle(batch: Waiting<In, Out>[]): Promise<void> {
    try {
      const results =
        batch.length === 1
          ? [await this.options.one(batch[0]!.input)]
          : await this.options.many(batch.map((call) => call.input));
      if (results.length !== batch.length)
        throw new Error(`a batch of ${batch.length} calls answered ${results.length} results`);
      for (const [index, call] of batch.entries()) call.resolve(results[index]!);
    } catch (error) {
      for (const call of batch) call.reject(error);
    }
  }
}
