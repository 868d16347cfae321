/**
 * The floor of a buy cycle: what the same work costs with nothing of ours in the way. The same HTTP calls
 * with a raw undici Pool (no validation, no retry policy, no decimals) and the very statements a real cycle
 * sent (text, parameters, protocol, as the statement proxy saw them on the wire) with a raw postgres.js
 * connection (no ORM, no repository, no row mapping), in the same order relative to the quote and the order.
 * Measured in the same run as the cycles, against the same sandbox, server and schema, so the ratio cancels
 * out the machine and the database's own work, and what is left is ours.
 *
 * A replayed cycle must do the same work, not just send the same text: it writes its own rows. So it runs
 * for a strategy of its own, on slots of its own, and every parameter that carried a key of the captured
 * cycle carries the replay's instead: the strategy's name, the slot, the quote and order ids the sandbox
 * answered, and each `id` an earlier statement returned (the cycle's, the balance snapshot's). Each
 * statement must answer what the captured one did (its command tag), or the replay stops.
 */
import postgres from 'postgres';
import { Pool } from 'undici';
import type { SandboxProcess } from '../harness/sandbox-process.js';
import type { StatementSeen } from '../harness/statement-counter.js';
import type { CallSpan } from './cycle-phases.js';
import type { CycleShape, CycleStep } from './cycle-shape.js';

export interface FloorSample {
  cycleMs: number;
  quoteToOrderMs: number;
  /** The cycle's HTTP calls, for the phases (cycle-phases.ts). */
  calls: CallSpan[];
}

/** The keys of the captured cycle, which a replay replaces with its own. */
export interface CapturedKeys {
  strategy: string;
  slot: Date;
  quoteId: string;
  serviceOrderId: string;
}

/** The replay's own strategy (recorded like the worker's) and its slots. */
export interface FloorIdentity {
  strategy: string;
  nextSlot(): Date;
}

const WARM_UP_ROUNDS = 20;

export interface Floor {
  /** Plays the shape `count` times (after warm-up rounds on first use) and returns one sample each. */
  play(count: number): Promise<FloorSample[]>;
  close(): Promise<void>;
}

export async function openFloor(
  sandbox: SandboxProcess,
  databaseUrl: string,
  shape: CycleShape,
  captured: CapturedKeys,
  identity: FloorIdentity,
): Promise<Floor> {
  const pool = new Pool(sandbox.url, { connections: 8, keepAliveTimeout: 60_000 });
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  const connection = await sql.reserve();
  const http = new RawCalls(pool, sandbox.token);
  const cycle = () => playCycle(shape.steps, connection, http, captured, identity);
  let warm = false;
  return {
    async play(count) {
      // The first rounds prepare statements and open sockets, as the warm-up cycles do on the real side.
      if (!warm) for (let i = 0; i < WARM_UP_ROUNDS; i++) await cycle();
      warm = true;
      const samples: FloorSample[] = [];
      for (let i = 0; i < count; i++) samples.push(await cycle());
      return samples;
    },
    async close() {
      connection.release();
      await sql.end({ timeout: 5 });
      await pool.close();
    },
  };
}

async function playCycle(
  steps: readonly CycleStep[],
  sql: postgres.ReservedSql,
  http: RawCalls,
  captured: CapturedKeys,
  identity: FloorIdentity,
): Promise<FloorSample> {
  // Captured value → the replay's own, for every key the cycle's statements carry.
  const keys = new Map<string, string>([
    [captured.strategy, identity.strategy],
    [captured.slot.toISOString(), identity.nextSlot().toISOString()],
  ]);
  const began = performance.now();
  let quoteId = '';
  let quoteReceived = began;
  let orderSent = began;
  const calls: CallSpan[] = [];
  for (const step of steps) {
    if ('sql' in step) {
      await Promise.all(step.sql.map((statement) => replay(sql, statement, keys)));
      continue;
    }
    const startMs = performance.now() - began;
    if (step.http === 'balance') {
      await http.get('/client/balance');
    } else if (step.http === 'quote') {
      quoteId = ((await http.get('/client/quote?symbols=USDTBRL&amount=100.00')) as { quoteId: string })
        .quoteId;
      quoteReceived = performance.now();
      keys.set(captured.quoteId, quoteId);
    } else {
      orderSent = performance.now();
      const order = (await http.post('/client/order', { quoteId })) as { id: string };
      keys.set(captured.serviceOrderId, order.id);
    }
    calls.push({ call: step.http, startMs, endMs: performance.now() - began });
  }
  return { cycleMs: performance.now() - began, quoteToOrderMs: orderSent - quoteReceived, calls };
}

/** Sends one captured statement as the worker's driver did, with the replay's keys in its parameters. */
async function replay(sql: postgres.ReservedSql, statement: StatementSeen, keys: Map<string, string>) {
  const parameters = statement.parameters.map((value) =>
    value === null ? null : (keys.get(value) ?? value),
  );
  const result =
    statement.protocol === 'simple'
      ? await sql.unsafe(statement.text).simple()
      : await sql.unsafe(statement.text, parameters as postgres.ParameterOrJSON<never>[], {
          prepare: statement.protocol === 'named',
        });
  // "INSERT 0 1", "UPDATE 1", "BEGIN": the command, and the rows when it counts them.
  const expected = statement.answer?.tag ?? '';
  const answered = /\d$/.test(expected) ? `${result.command} ${result.count}` : result.command;
  if (answered !== expected.replace(/^INSERT 0 /, 'INSERT '))
    throw new Error(`floor: "${statement.text.slice(0, 60)}…" answered ${answered}, the cycle's ${expected}`);
  const returnedId = statement.answer?.firstRow?.id;
  if (returnedId != null) keys.set(returnedId, String(result[0]!.id));
}

/** Requests with nothing but undici: no validation, no retry policy, no decimals. */
class RawCalls {
  private readonly headers: Record<string, string>;

  constructor(
    private readonly pool: Pool,
    token: string,
  ) {
    this.headers = { authorization: `Bearer ${token}`, accept: 'application/json' };
  }

  async get(path: string): Promise<unknown> {
    const response = await this.pool.request({ method: 'GET', path, headers: this.headers });
    const body = await response.body.json();
    if (response.statusCode !== 200) throw new Error(`floor: GET ${path} answered ${response.statusCode}`);
    return body;
  }

  async post(path: string, body: unknown): Promise<unknown> {
    const response = await this.pool.request({
      method: 'POST',
      path,
      headers: { ...this.headers, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const answer = await response.body.json();
    if (response.statusCode !== 200) throw new Error(`floor: POST ${path} answered ${response.statusCode}`);
    return answer;
  }
}
