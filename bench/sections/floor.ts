/**
 * The floor of a buy cycle: what the same work costs with nothing of ours in the way. The same HTTP calls
 * with a raw undici Pool (no validation, no retry policy, no decimals) and the same number and kind of SQL
 * statements with a raw postgres.js connection (no ORM, no repository), in the same order relative to the
 * quote and the order as in a real cycle. Measured in the same run as the cycles, against the same sandbox
 * and server, so the ratio cancels out the machine.
 */
import postgres from 'postgres';
import { Pool } from 'undici';
import type { SandboxProcess } from '../harness/sandbox-process.js';
import type { CycleShape, CycleStep } from './cycle-shape.js';

export interface FloorSample {
  cycleMs: number;
  quoteToOrderMs: number;
}

const SCRATCH_TABLE = 'bench_floor_rows';
const WARM_UP_ROUNDS = 20;

export interface Floor {
  /** Plays the shape `count` times (after warm-up rounds on first use) and returns one sample each. */
  play(shape: CycleShape, count: number): Promise<FloorSample[]>;
  close(): Promise<void>;
}

export async function openFloor(sandbox: SandboxProcess, databaseUrl: string): Promise<Floor> {
  const pool = new Pool(sandbox.url, { connections: 8, keepAliveTimeout: 60_000 });
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  await sql.unsafe(
    `create table if not exists ${SCRATCH_TABLE} (id bigint generated always as identity primary key, label text not null, amount numeric(30, 10), at timestamptz not null, detail jsonb)`,
  );
  const connection = await sql.reserve();
  const runner = new StatementRunner(connection);
  const http = new RawCalls(pool, sandbox.token);
  let warm = false;
  return {
    async play(shape, count) {
      // The first rounds prepare statements and open sockets, as the warm-up cycles do on the real side.
      if (!warm) for (let i = 0; i < WARM_UP_ROUNDS; i++) await playCycle(shape.steps, runner, http);
      warm = true;
      const samples: FloorSample[] = [];
      for (let i = 0; i < count; i++) samples.push(await playCycle(shape.steps, runner, http));
      return samples;
    },
    async close() {
      connection.release();
      await sql.unsafe(`drop table if exists ${SCRATCH_TABLE}`);
      await sql.end({ timeout: 5 });
      await pool.close();
    },
  };
}

/** Plays statement kinds as comparable raw statements on the scratch table. */
class StatementRunner {
  private lastId = 0;

  constructor(private readonly sql: postgres.ReservedSql) {}

  async run(kind: string): Promise<void> {
    const sql = this.sql;
    const now = new Date();
    switch (kind) {
      case 'insert': {
        const [row] =
          await sql`insert into bench_floor_rows (label, amount, at, detail) values (${'floor'}, ${'100.00'}, ${now}, ${sql.json({ step: 1 })}) returning *`;
        this.lastId = Number(row!.id);
        return;
      }
      case 'update':
        await sql`update bench_floor_rows set amount = ${'5.4321'}, at = ${now} where id = ${this.lastId} returning *`;
        return;
      case 'select':
        await sql`select * from bench_floor_rows where id = ${this.lastId}`;
        return;
      case 'with':
        // The worker's CTEs write (record a quote and move the cycle in one statement); so does this one.
        await sql`with added as (insert into bench_floor_rows (label, amount, at) values (${'floor'}, ${'100.00'}, ${now}) returning id)
          update bench_floor_rows set amount = ${'5.4321'}, at = ${now} where id = ${this.lastId} returning *, (select id from added)`;
        return;
      case 'begin':
      case 'commit':
      case 'rollback':
        await sql.unsafe(kind);
        return;
      default:
        await sql`select 1`;
    }
  }
}

async function playCycle(
  steps: readonly CycleStep[],
  runner: StatementRunner,
  http: RawCalls,
): Promise<FloorSample> {
  const began = performance.now();
  let quoteId = '';
  let quoteReceived = began;
  let orderSent = began;
  for (const step of steps) {
    if ('sql' in step) {
      await (step.sql.length === 1
        ? runner.run(step.sql[0]!)
        : Promise.all(step.sql.map((kind) => runner.run(kind))));
    } else if (step.http === 'balance') {
      await http.get('/client/balance');
    } else if (step.http === 'quote') {
      quoteId = ((await http.get('/client/quote?symbols=USDTBRL&amount=100.00')) as { quoteId: string })
        .quoteId;
      quoteReceived = performance.now();
    } else {
      orderSent = performance.now();
      await http.post('/client/order', { quoteId });
    }
  }
  return { cycleMs: performance.now() - began, quoteToOrderMs: orderSent - quoteReceived };
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
