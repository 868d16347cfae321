/**
 * Where each target stands, as `status`, the console and the REST API show it, on both backends: targets of
 * two accounts recorded as running versions and bought by the engine against the sandbox on a fake clock
 * (the windows sit around the real time, since `status` as a command reads the system clock), then read back
 * from the database alone. One target is active and behind its straight line (the worker ran only its first
 * two slots), one completed, one missed with its remainder stated; a DCA named like a target passes the text
 * filter and is dropped; a reader limited to one account never sees the other's target.
 */
import { writeFile } from 'node:fs/promises';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword } from '../../src/console/passwords.js';
import { registerConsole } from '../../src/console/server.js';
import { readTargets, type TargetReport } from '../../src/control/index.js';
import {
  type Database,
  EVERY_ACCOUNT,
  oneAccount,
  openConsoleStore,
  openMigratedDatabase,
} from '../../src/db/index.js';
import { recordStrategiesSeen, runCycle } from '../../src/engine/index.js';
import { Decimal, ZERO } from '../../src/money.js';
import { createReceiverServer, listen } from '../../src/observability/http-server.js';
import { registerRestApi } from '../../src/rest-api/server.js';
import { newApiToken } from '../../src/rest-api/tokens.js';
import { parseStrategyText, type Strategy, strategyHash } from '../../src/strategy/index.js';
import { slotsBetween } from '../../src/strategy/slots.js';
import { ConsoleClient, capturingLogger, PASSWORD, TEST_COST } from '../console/support.js';
import { type EngineBench, startEngineBench } from '../engine/support/harness.js';
import { createTestDatabase, type TestDatabase, testBackends } from '../support/database.js';
import { runCommand, writeWorkerFiles } from '../support/worker-process.js';

const MINUTE = 60_000;
const ACCOUNTS = ['northco', 'southco'] as const;
/** The real minute the test starts in: the active target's window runs through it, the others ended before. */
const NOW = Math.floor(Date.now() / MINUTE) * MINUTE;
const wall = (ms: number) => new Date(ms).toISOString().slice(0, 16);

const DOCUMENTS = {
  payables: `name: payables
kind: target
account: northco
symbol: USDTBRL
target: { spend: "10000.00" }
window: { start: "${wall(NOW - 5 * MINUTE)}", end: "${wall(NOW + 30 * MINUTE)}" }
every: "* * * * *"
slice: { min: "100.00", max: "2000.00" }
maxPrice: "9.00"
timezone: UTC
`,
  payroll: `name: payroll
kind: target
account: northco
symbol: USDTBRL
target: { spend: "3000.00" }
window: { start: "${wall(NOW - 20 * MINUTE)}", end: "${wall(NOW - 10 * MINUTE)}" }
every: "* * * * *"
slice: { min: "100.00", max: "1000.00" }
opportunistic: { belowAveragePct: "0.3", upTo: "2x" }
timezone: UTC
`,
  hedge: `name: hedge
kind: target
account: southco
symbol: USDTBRL
target: { receive: "2000.000000" }
window: { start: "${wall(NOW - 20 * MINUTE)}", end: "${wall(NOW - 10 * MINUTE)}" }
every: "* * * * *"
slice: { min: "50.00", max: "500.00" }
timezone: UTC
`,
  'target-fund': `name: target-fund
kind: dca
account: northco
symbol: USDTBRL
amount: "100.00"
schedule: "0 0 1 1 *"
timezone: UTC
`,
  'plain-dca': `name: plain-dca
kind: dca
account: northco
symbol: USDTBRL
amount: "100.00"
schedule: "0 0 1 1 *"
timezone: UTC
`,
};

/** The slots the worker ran of each target: all of payroll's and hedge's, the first two of payables'. */
function slotsRun(strategy: Strategy): Date[] {
  if (strategy.kind !== 'target') return [];
  const { start, end } = strategy.target;
  const all = slotsBetween(strategy.schedule, strategy.timezone, new Date(start.getTime() - 1), end);
  return strategy.name === 'payables' ? all.slice(0, 2) : all.filter((slot) => slot < end);
}

/** What the record says a target's orders spent and received, and the mean of every quote it took. */
async function recordOf(database: Database, name: string) {
  const cycles = await database.cycles.listRecent(EVERY_ACCOUNT, { limit: 100, strategy: name });
  let spent = ZERO;
  let received = ZERO;
  let priced = ZERO;
  let quotes = 0;
  for (const cycle of cycles) {
    const taken = await database.quotes.forCycle(cycle.id);
    for (const quote of taken) priced = priced.plus(quote.price);
    quotes += taken.length;
    if (cycle.state !== 'placed') continue;
    spent = spent.plus(cycle.totalCost!);
    received = received.plus(taken.find((quote) => quote.id === cycle.quoteRecordId)!.totalFilled);
  }
  return { spent, received, quoteAverage: priced.dividedBy(quotes), placed: cycles.length };
}

describe.each(testBackends())('targets where operators look (%s)', { timeout: 180_000 }, (backend) => {
  const clock = { now: NOW - 20 * MINUTE };
  let env: Record<string, string>;
  let test: TestDatabase;
  let bench: EngineBench;
  let server: FastifyInstance;
  let base: string;
  /** Set once the test closed them itself (on PGlite, before a command opens the folder). */
  let closed = false;

  beforeAll(async () => {
    env = await writeWorkerFiles(Object.values(DOCUMENTS).join('---\n'), '');
    const fakeClock = () => new Date(clock.now);
    // PGlite: the command opens the same folder later, as `status` does beside a worker of `npm start`.
    test =
      backend === 'postgres'
        ? await createTestDatabase('postgres', { clock: fakeClock })
        : await (async () => {
            const { database } = await openMigratedDatabase({
              dataDir: env.TREASURY_DATA_DIR,
              clock: fakeClock,
            });
            return { database, backend, drop: () => database.close() };
          })();
    if (test.url) env.DATABASE_URL = test.url;
    bench = await startEngineBench({
      test,
      clock: fakeClock,
      accounts: ACCOUNTS,
      sandbox: { now: () => clock.now },
    });
    await writeFile(
      env.TREASURY_CONFIG!,
      `accounts:\n${ACCOUNTS.map((name) => `  - name: ${name}\n    api: { url: "${bench.sandbox.url}", token: token-${name} }\n`).join('')}`,
    );

    const strategies = Object.entries(DOCUMENTS).map(([name, text]) => {
      const parsed = parseStrategyText(text, `${name}.yaml`);
      expect(parsed.problems).toEqual([]);
      return { strategy: parsed.strategies[0]!.strategy, text };
    });
    const resolutions = await bench.database.strategyVersions.record(
      strategies.map(({ strategy, text }) => ({ name: strategy.name, hash: strategyHash(strategy), text })),
      { changes: 'apply', actor: 'automation' },
    );
    expect(resolutions.map((resolution) => resolution.runningVersion)).toEqual([1, 1, 1, 1, 1]);
    const running = strategies.map(({ strategy }) => Object.assign({}, strategy, { version: 1 }));
    await recordStrategiesSeen(bench.context, running);
    const runs = running
      .flatMap((strategy) => slotsRun(strategy).map((slot) => ({ strategy, slot })))
      .sort((a, b) => a.slot.getTime() - b.slot.getTime());
    for (const { strategy, slot } of runs) {
      clock.now = slot.getTime();
      const report = await runCycle(bench.inAccount(strategy.account), {
        strategy,
        slot,
        trigger: 'schedule',
      });
      expect(report.outcome, `${strategy.name} ${slot.toISOString()}`).toBe('placed');
    }
    clock.now = NOW;

    // The console and the REST API as `run` serves them, on one listener, on the same clock.
    const store = openConsoleStore(bench.database, fakeClock);
    const passwordHash = await hashPassword(PASSWORD, TEST_COST);
    await store.people.add({ name: 'admin', role: 'admin', passwordHash }, 'test-setup');
    await store.people.add(
      { name: 'nora', role: 'viewer', passwordHash, accounts: ['northco'] },
      'test-setup',
    );
    server = createReceiverServer(undefined, ['127.0.0.1']);
    const accounts = new Map(ACCOUNTS.map((name) => [name, { name }]));
    const logger = capturingLogger([]);
    registerConsole(server, { database: bench.database, store, clock: fakeClock, logger, accounts });
    registerRestApi(server, {
      database: bench.database,
      store,
      clock: fakeClock,
      logger,
      accounts,
      timeZone: 'UTC',
      requestsPerMinute: 1000,
    });
    base = `http://127.0.0.1:${await listen(server, '127.0.0.1', 0)}`;
  }, 180_000);

  afterAll(async () => {
    if (closed) return;
    await server?.close();
    await bench?.close();
    await test?.drop();
  });

  const byName = (reports: readonly TargetReport[]) =>
    new Map(reports.map((report) => [report.name, report]));

  it('reads each running target from its stored version, with its standing from the record', async () => {
    // The text filter lets the DCA named like a target through, for parsing to drop, and no other DCA.
    const candidates = await bench.database.strategyVersions.listRunningTargets(EVERY_ACCOUNT);
    expect(candidates.map((candidate) => candidate.strategy)).toEqual([
      'payables',
      'payroll',
      'target-fund',
      'hedge',
    ]);
    const reports = await readTargets(bench.database, EVERY_ACCOUNT, new Date(NOW));
    expect(reports.map((report) => [report.account, report.name, report.version])).toEqual([
      ['northco', 'payables', 1],
      ['northco', 'payroll', 1],
      ['southco', 'hedge', 1],
    ]);
    const targets = byName(reports);

    // Two slots of 35 run, five minutes of 35 gone: behind the straight line by what the line says less done.
    const payables = targets.get('payables')!;
    const payablesRecord = await recordOf(bench.database, 'payables');
    expect(payablesRecord.placed).toBe(2);
    const line = new Decimal('10000.00').times(5).dividedBy(35);
    expect(payables.standing).toMatchObject({
      state: 'active',
      measure: 'spend',
      done: payablesRecord.spent,
      spent: payablesRecord.spent,
      received: payablesRecord.received,
      left: new Decimal('10000.00').minus(payablesRecord.spent),
    });
    // Each slice is 10,000.00 less what was spent over the slots left, to the cent below.
    expect(payablesRecord.spent.greaterThanOrEqualTo('571.40')).toBe(true);
    expect(payablesRecord.spent.lessThanOrEqualTo('571.42')).toBe(true);
    expect(payables.standing.line.toFixed(8)).toBe(line.toFixed(8));
    expect(payables.standing.ahead.toFixed(8)).toBe(payablesRecord.spent.minus(line).toFixed(8));
    expect(payables.standing.ahead.isNegative()).toBe(true);
    expect(payables.standing.averagePrice).toEqual(payablesRecord.spent.dividedBy(payablesRecord.received));
    expect(payables.standing.quoteAverage!.toFixed(10)).toBe(payablesRecord.quoteAverage.toFixed(10));
    // At the pace so far (571.42 in the 5 slots before now) the rest takes 83 more slots, the first at now.
    const start = NOW - 5 * MINUTE;
    const more = new Decimal('10000.00')
      .minus(payablesRecord.spent)
      .times(5)
      .dividedBy(payablesRecord.spent)
      .ceil();
    expect(payables.standing.projectedFinish).toEqual(new Date(NOW + (more.toNumber() - 1) * MINUTE));
    expect(payables.window).toEqual({ start: new Date(start), end: new Date(NOW + 30 * MINUTE) });
    expect(payables.strategy.maxPrice?.toString()).toBe('9');

    const payroll = targets.get('payroll')!;
    const payrollRecord = await recordOf(bench.database, 'payroll');
    expect(payroll.standing).toMatchObject({
      state: 'completed',
      measure: 'spend',
      done: payrollRecord.spent,
    });
    expect(payroll.standing.left.lessThan('0.02')).toBe(true);
    expect(payroll.standing.projectedFinish).toBeUndefined();

    // 500.00 a slot at most buys some 926 USDT of 2,000: the window ended short, and says by how much.
    const hedge = targets.get('hedge')!;
    const hedgeRecord = await recordOf(bench.database, 'hedge');
    expect(hedge.measure).toBe('receive');
    expect(hedge.standing).toMatchObject({
      state: 'missed',
      done: hedgeRecord.received,
      received: hedgeRecord.received,
      spent: hedgeRecord.spent,
      left: new Decimal('2000').minus(hedgeRecord.received),
      line: new Decimal('2000'),
    });
    // Ten slices of 500.00, each charged to the cent below what its quantity costs.
    expect(hedgeRecord.spent.greaterThan('4999.80') && hedgeRecord.spent.lessThanOrEqualTo('5000.00')).toBe(
      true,
    );
    expect(hedge.standing.left.greaterThan('1000')).toBe(true);
  });

  it('reads only the targets of the accounts in scope', async () => {
    const north = await readTargets(bench.database, oneAccount('northco'), new Date(NOW));
    expect(north.map((report) => report.name)).toEqual(['payables', 'payroll']);
    const south = await readTargets(bench.database, oneAccount('southco'), new Date(NOW));
    expect(south.map((report) => report.name)).toEqual(['hedge']);
    expect(await readTargets(bench.database, { accounts: [] }, new Date(NOW))).toEqual([]);
  });

  it("shows the targets on the console's strategies page and overview, and none of another account to a limited person", async () => {
    const admin = new ConsoleClient(base);
    expect((await admin.login('admin')).status).toBe(303);
    const page = (await admin.get('/strategies')).body;
    const section = (name: string) => {
      const found = new RegExp(`<section id="target-${name}">(.*?)</section>`, 's').exec(page)?.[1];
      expect(found, name).toBeDefined();
      return found!.replace(/<svg.*?<\/svg>/gs, '').replace(/<[^>]+>/g, '');
    };
    const payables = section('payables');
    expect(payables).toContain('payables (account northco, version 1) active');
    expect(payables).toContain('spend 10000.00 fiat');
    expect(payables).toContain('* * * * * UTC');
    expect(payables).toContain('100.00 to 2000.00 fiat per order');
    expect(payables).toContain('Max price9\n');
    expect(payables).toMatch(/behind the line \(the line is at 1428\.57 fiat now\)/);
    expect(section('payroll')).toContain('up to 2× the paced slice when a quote is at least 0.3% below');
    expect(section('payroll')).toContain('completed');
    const hedge = section('hedge');
    const left = (await readTargets(bench.database, EVERY_ACCOUNT, new Date(NOW)))
      .find((report) => report.name === 'hedge')!
      .standing.left.toFixed(6);
    expect(hedge).toContain('missed');
    expect(hedge).toContain(`${left} crypto short when the window ended`);
    expect(hedge).toContain('receive 2000.000000 crypto');
    // A DCA named like a target is listed as a strategy, with no section of a target.
    expect(page).toContain('<tr id="target-fund">');
    expect(page).not.toContain('id="target-target-fund"');
    expect(page).toContain('<a href="#target-payables">target</a>');
    // The next slot a target buys at lies in its window: none once it ended.
    const nextSlot = (name: string) =>
      new RegExp(`<tr id="${name}">(?:<td>.*?</td>\\s*){4}<td>(.*?)</td>`, 's').exec(page)?.[1];
    expect(nextSlot('payables')).toContain(new Date(NOW + MINUTE).toISOString());
    expect(nextSlot('payroll')).toBe('—');

    const overview = (await admin.get('/')).body;
    expect(overview).toContain('<h2>Targets</h2>');
    for (const name of ['payables', 'payroll', 'hedge'])
      expect(overview).toContain(`<a href="/strategies#target-${name}">${name}</a>`);
    expect(overview).toMatch(/aria-label="payables: 5\.71% of its target, the line at 14\.28%"/);
    expect(overview).toContain(`<strong>${left} crypto short</strong> when the window ended`);

    const nora = new ConsoleClient(base);
    expect((await nora.login('nora')).status).toBe(303);
    for (const path of ['/', '/live', '/strategies']) {
      const body = (await nora.get(path)).body;
      expect(body, path).toContain('payables');
      expect(body, path).not.toContain('hedge');
      expect(body, path).not.toContain('southco');
    }
  });

  it('answers the targets in the REST API status as the document says, within the token’s accounts', async () => {
    const store = openConsoleStore(bench.database);
    const add = async (name: string, accounts: string[] | null) => {
      const made = newApiToken();
      await store.apiTokens.add({ name, role: 'viewer', accounts, expiresAt: null, ...made }, 'test');
      return made.token;
    };
    const document = (await (await fetch(`${base}/api/v1/openapi.json`)).json()) as object;
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats.default(ajv);
    ajv.addSchema(document, 'openapi');
    const valid = ajv.compile({ $ref: 'openapi#/components/schemas/Status' });
    const status = async (token: string) => {
      const answer = await fetch(`${base}/api/v1/status`, { headers: { authorization: `Bearer ${token}` } });
      expect(answer.status).toBe(200);
      const body = await answer.json();
      expect(valid(body), ajv.errorsText(valid.errors)).toBe(true);
      return body as { targets: Record<string, unknown>[] };
    };
    const every = await status(await add('every-reader', null));
    expect(every.targets.map((target) => target.name)).toEqual(['payables', 'payroll', 'hedge']);
    const payables = every.targets[0]!;
    expect(payables).toMatchObject({ state: 'active', measure: 'spend', total: '10000', line: '1428.57' });
    expect(payables.ahead).toMatch(/^-85\d\.\d\d$/);
    const hedge = every.targets[2]!;
    expect(hedge).toMatchObject({ account: 'southco', state: 'missed', measure: 'receive', line: '2000' });
    const north = await status(await add('north-reader', ['northco']));
    expect(north.targets.map((target) => target.name)).toEqual(['payables', 'payroll']);
  });

  it('prints the targets in `status` and `status --json`, narrowed by --account', async () => {
    const reports = byName(await readTargets(bench.database, EVERY_ACCOUNT, new Date(NOW)));
    // PGlite's folder is opened by one process at a time: the command's turn.
    if (backend === 'pglite') {
      closed = true;
      await server.close();
      await bench.close();
      await test.drop();
    }
    const run = async (args: string[]) => {
      const result = await runCommand(args, env);
      expect(result.code, result.stderr).toBe(0);
      return result.stdout;
    };
    const json = JSON.parse(await run(['status', '--json'])) as { targets: Record<string, string>[] };
    const shown = new Map(json.targets.map((target) => [target.name, target]));
    expect([...shown.keys()]).toEqual(['payables', 'payroll', 'hedge']);
    for (const [name, report] of reports) {
      const { standing } = report;
      expect(shown.get(name)).toMatchObject({
        account: report.account,
        version: 1,
        measure: standing.measure,
        total: standing.total.toFixed(),
        done: standing.done.toFixed(),
        spent: standing.spent.toFixed(),
        received: standing.received.toFixed(),
        left: standing.left.toFixed(),
        averagePrice: standing.averagePrice!.toDecimalPlaces(4).toFixed(),
        window: { start: report.window.start.toISOString(), end: report.window.end.toISOString() },
      });
    }
    // The command's clock is the system's: the minute has gone on, and the line with it.
    const payables = shown.get('payables')!;
    expect(payables.state).toBe('active');
    expect(payables.percentDone).toBe('5.71');
    expect(new Decimal(payables.ahead!).lessThanOrEqualTo(reports.get('payables')!.standing.ahead)).toBe(
      true,
    );
    expect(shown.get('payroll')).toMatchObject({ state: 'completed', projectedFinish: null });
    expect(shown.get('hedge')).toMatchObject({ state: 'missed', line: '2000' });

    const human = await run(['status']);
    const hedgeLeft = reports.get('hedge')!.standing.left.toFixed();
    expect(human).toContain(
      `MISSED target hedge (account southco): ${hedgeLeft} of 2000 left to receive when its window ended ${new Date(NOW - 10 * MINUTE).toISOString()}`,
    );
    expect(human).toContain('targets (3)');
    expect(human).toMatch(/^northco\s+payables\s+active\s+spend\s+571\.4\d?\s+10000\s+5\.71%.*\d behind/m);

    const north = JSON.parse(await run(['status', '--json', '--account', 'northco'])) as {
      targets: { name: string }[];
    };
    expect(north.targets.map((target) => target.name)).toEqual(['payables', 'payroll']);
    expect(await run(['status', '--account', 'northco'])).not.toContain('hedge');
  });
});
