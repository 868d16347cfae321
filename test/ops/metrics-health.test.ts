import { hostname } from 'node:os';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runCommand } from '../support/worker-process.js';
import { OPS_SECRET, OPS_TOKEN, type OpsWorld, startOpsWorld } from './support/ops-world.js';
import { select, total, value } from './support/prometheus.js';

const STRATEGIES = `name: ops-dca
kind: dca
symbol: USDTBRL
amount: "100.00"
schedule: "* * * * * *"
timezone: UTC
maxPrice: "9.00"
guards:
  minCreditAvailable: "1000.00"
---
name: ops-skip
kind: dca
symbol: USDTBRL
amount: "100.00"
schedule: "*/2 * * * * *"
timezone: UTC
maxPrice: "1.00"
`;

// A quote is usable for one second after its request left (window 5 s, margin 4 s): loopback quotes take
// milliseconds, and a quote delayed by the sandbox for 1.1 s is late at the worker without a clock trick.
const SETTINGS = `log:
  level: info
engine:
  deadlineMarginMs: 4000
  maxFreshQuotes: 0
  reload:
    watch: false
tracking:
  poll:
    intervalMs: 200
    minDelayMs: 200
  surveyIntervalMs: 300
  balance:
    intervalMs: 500
`;

const OPEN_STATUSES = ['pending', 'partial', 'paid', 'withdrawn'];

/**
 * The worker as an operator runs it (`treasury-bot run`, a child process) against the sandbox, with webhooks
 * flowing to its receiver: every series of the issue is fed, the probes answer, status and the kill switch
 * work from other processes, and SIGINT stops it cleanly.
 */
describe.skipIf(inject('treasuryDatabase').backend !== 'postgres')('operating the worker', () => {
  let world: OpsWorld;
  const startedAt = Date.now() / 1000;

  beforeAll(async () => {
    world = await startOpsWorld({ strategies: STRATEGIES, settings: SETTINGS, logLevel: 'info' });
  });
  afterAll(async () => {
    await world?.close();
  });

  it('feeds every series of /metrics and answers /healthz and /readyz', async () => {
    await world.waitForLines('"outcome":"placed"', 3);
    await world.waitForLines('"outcome":"skipped","reason":"price_above_max"', 1);
    await world.worker.waitForLine('"to":"settled"');
    await world.worker.waitForLine('"result":"stored","msg":"webhook event received"');

    // A late quote: the sandbox holds quote answers past the worker's deadline until one cycle gives up.
    world.sandbox.setFaults({ quote: { latencyMs: 1_100 } });
    await world.worker.waitForLine('"reason":"quote_deadline_exceeded"');
    world.sandbox.setFaults({});

    // A delivery sent again is deduplicated; one with a wrong secret is rejected before it is read.
    const logs = await fetch(`${world.sandbox.url}/client/webhook/logs?pageSize=20`, {
      headers: { authorization: `Bearer ${OPS_TOKEN}` },
    }).then((response) => response.json() as Promise<{ data: { success: boolean; payload: unknown }[] }>);
    const delivered = logs.data.find((entry) => entry.success);
    expect(delivered).toBeDefined();
    const again = await world.post(`/webhooks/${OPS_SECRET}`, delivered?.payload);
    expect(again).toEqual({ status: 200, body: '{"result":"duplicate"}' });
    expect((await world.post('/webhooks/wrong-secret-0123456789', delivered?.payload)).status).toBe(401);

    const scrape = await world.scrape();
    const now = Date.now() / 1000;

    // Cycles by strategy, outcome and reason, with their durations.
    const cycles = 'treasury_cycles_total';
    expect(
      value(scrape, cycles, { strategy: 'ops-dca', outcome: 'placed', reason: 'ok' }),
    ).toBeGreaterThanOrEqual(3);
    expect(total(scrape, cycles, { strategy: 'ops-skip', reason: 'price_above_max' })).toBeGreaterThanOrEqual(
      1,
    );
    expect(total(scrape, cycles, { reason: 'quote_deadline_exceeded' })).toBeGreaterThanOrEqual(1);
    expect(total(scrape, 'treasury_cycle_duration_seconds_count')).toBe(total(scrape, cycles));
    const lastSuccess = value(scrape, 'treasury_last_successful_cycle_timestamp_seconds', {
      strategy: 'ops-dca',
    });
    expect(lastSuccess).toBeGreaterThan(startedAt);
    expect(lastSuccess).toBeLessThanOrEqual(now);
    expect(value(scrape, 'treasury_strategy_interval_seconds', { strategy: 'ops-dca' })).toBe(1);
    expect(value(scrape, 'treasury_strategy_interval_seconds', { strategy: 'ops-skip' })).toBe(2);

    // Request latency by operation (quote, order, tracking, balance), errors by code, quote to order.
    const latency = 'treasury_api_request_duration_seconds_count';
    for (const operation of ['getQuote', 'createOrder', 'getTracking', 'getBalance'])
      expect(total(scrape, latency, { operation, status: '200' }), operation).toBeGreaterThanOrEqual(1);
    // The late quotes' requests were abandoned at the worker's deadline: errors by operation and code.
    expect(
      value(scrape, 'treasury_api_errors_total', { operation: 'getQuote', code: 'API_UNAVAILABLE' }),
    ).toBeGreaterThanOrEqual(1);
    const quoteToOrder = value(scrape, 'treasury_quote_to_order_seconds_count');
    expect(quoteToOrder).toBeGreaterThanOrEqual(3);
    expect(value(scrape, 'treasury_quote_to_order_seconds_sum') / quoteToOrder).toBeLessThan(1);
    expect(total(scrape, 'treasury_quotes_expired_total', { where: 'local' })).toBeGreaterThanOrEqual(1);

    // Unsure and reconciled cycles: none here, and every reconciliation result present at zero.
    expect(value(scrape, 'treasury_unsure_cycles')).toBe(0);
    for (const result of ['adopted', 'not_placed', 'ambiguous'])
      expect(value(scrape, 'treasury_reconciled_cycles_total', { result })).toBe(0);

    // Settlement: open orders by status, changes, duration to settled, stuck orders.
    for (const status of OPEN_STATUSES) {
      const open = value(scrape, 'treasury_open_orders', { account: 'default', status });
      expect(Number.isInteger(open) && open >= 0, `open ${status}: ${open}`).toBe(true);
    }
    expect(total(scrape, 'treasury_settlement_changes_total', { status: 'settled' })).toBeGreaterThanOrEqual(
      1,
    );
    const settled = value(scrape, 'treasury_settlement_duration_seconds_count');
    expect(settled).toBeGreaterThanOrEqual(1);
    expect(value(scrape, 'treasury_settlement_duration_seconds_sum') / settled).toBeLessThan(20);
    expect(value(scrape, 'treasury_stuck_orders', { account: 'default' })).toBe(0);
    expect(value(scrape, 'treasury_settlement_anomalies_total')).toBe(0);

    // Balance and credit from the snapshots (the sandbox's credit line is 1,000,000.00).
    expect(value(scrape, 'treasury_balance', { currency: 'BRL' })).toBeGreaterThanOrEqual(0);
    expect(value(scrape, 'treasury_balance', { currency: 'USDT' })).toBeGreaterThanOrEqual(0);
    expect(value(scrape, 'treasury_credit', { account: 'default', kind: 'total' })).toBe(1_000_000);
    const used = value(scrape, 'treasury_credit', { kind: 'used' });
    expect(used).toBeGreaterThanOrEqual(0);
    expect(value(scrape, 'treasury_credit', { kind: 'available' })).toBeCloseTo(1_000_000 - used, 2);
    expect(value(scrape, 'treasury_can_withdraw', { account: 'default' })).toBe(1);

    // Webhook events received, deduplicated and rejected.
    const events = 'treasury_webhook_events_total';
    expect(
      value(scrape, events, { account: 'default', kind: 'order', result: 'stored' }),
    ).toBeGreaterThanOrEqual(1);
    expect(total(scrape, events, { result: 'duplicate' })).toBeGreaterThanOrEqual(1);
    // The wrong secret on the default account's path counts as that account's.
    expect(value(scrape, events, { account: 'default', kind: 'unknown', result: 'rejected' })).toBe(1);

    // Database errors (none) and the kill switch; the series are declared even while nothing failed.
    expect(scrape.types.get('treasury_database_errors_total')).toBe('counter');
    expect(total(scrape, 'treasury_database_errors_total')).toBe(0);
    expect(value(scrape, 'treasury_paused')).toBe(0);
    expect(value(scrape, 'treasury_external_orders_total')).toBe(0);
    expect(value(scrape, 'treasury_halted_strategies')).toBe(0);

    // The process defaults.
    for (const name of [
      'process_cpu_user_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_heap_size_used_bytes',
    ])
      expect(value(scrape, name), name).toBeGreaterThan(0);
    expect(select(scrape, 'nodejs_eventloop_lag_seconds')).toHaveLength(1);

    expect(await world.get('/healthz')).toEqual({ status: 200, body: '{"status":"ok"}' });
    // Two listeners: the webhook one serves nothing but the receiver, the ops one not the receiver.
    expect((await fetch(`${world.webhookUrl}/metrics`)).status).toBe(404);
    expect((await fetch(`${world.webhookUrl}/readyz`)).status).toBe(404);
    expect((await world.get('/webhooks/anything-at-all-0123')).status).toBe(404);
    const ready = await world.get('/readyz');
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.body)).toEqual({
      ready: true,
      paused: false,
      checks: {
        database: { ok: true },
        migrations: { ok: true },
        service: { ok: true },
        clock: { ok: true },
      },
    });
  });

  it('prints status from another process: recent cycles, open orders with their age, unsure, pause state', async () => {
    const run = await runCommand(['status', '--json', '--limit', '5'], world.env);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toBe('');
    const status = JSON.parse(run.stdout);
    expect(status.paused).toMatchObject({ paused: false });
    expect(status.recentCycles).toHaveLength(5);
    expect(status.recentCycles[0]).toEqual(
      expect.objectContaining({ strategy: expect.stringMatching(/^ops-/), state: expect.any(String) }),
    );
    const placed = status.recentCycles.find((cycle: { state: string }) => cycle.state === 'placed');
    expect(placed).toMatchObject({ reason: 'ok', quoteId: expect.any(String), orderId: expect.any(String) });
    expect(placed.totalCost).toMatch(/^\d+(\.\d+)?$/);
    // Each cycle with an order says how far its settlement got; one without an order says null.
    expect([...OPEN_STATUSES, 'settled']).toContain(placed.settlement);
    for (const cycle of status.recentCycles.filter((c: { orderId: string | null }) => c.orderId === null))
      expect(cycle.settlement).toBeNull();
    expect(status.unsureCycles).toEqual([]);
    expect(status.discrepancies).toEqual([]);
    // The running worker is a replica: where it runs, since when, its last beat and its cycles in flight.
    expect(status.replicas).toEqual([
      {
        id: expect.any(String),
        host: hostname(),
        pid: world.worker.child.pid,
        startedAt: expect.any(String),
        lastHeartbeat: expect.any(String),
        inFlightCycles: expect.any(Number),
        // No 429 was met, so no pace was learnt and none is configured.
        apiPace: null,
      },
    ]);
    expect(Date.now() - Date.parse(status.replicas[0].lastHeartbeat)).toBeLessThan(10_000);
    for (const order of status.openOrders) {
      expect(OPEN_STATUSES).toContain(order.status);
      expect(Number.isInteger(order.ageSeconds) && order.ageSeconds >= 0).toBe(true);
    }

    const human = await runCommand(['status', '--limit', '3'], world.env);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/^running \(kill switch off\)/);
    expect(human.stdout).toMatch(/recent cycles \(3\)/);
    expect(human.stdout).toMatch(/\bsettlement\b/);
    expect(human.stdout).toMatch(/unsure cycles awaiting reconciliation \(0\)/);
    expect(human.stdout).toMatch(/replicas \(1\)\n.*\bhost\b.*\bpid\b.*\blastHeartbeat\b.*\binFlight\b/);
  });

  it('shows the kill switch in /readyz, /metrics and status, and keeps the replica ready', async () => {
    const pause = await runCommand(['pause', '--reason', 'ops drill', '--json'], world.env);
    expect(pause.code, pause.stderr).toBe(0);
    await world.worker.waitForLine('KILL SWITCH ON');

    const ready = await world.get('/readyz');
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.body)).toMatchObject({ ready: true, paused: true });
    expect(value(await world.scrape(), 'treasury_paused')).toBe(1);
    const status = JSON.parse((await runCommand(['status', '--json', '--limit', '1'], world.env)).stdout);
    expect(status.paused).toMatchObject({ paused: true, reason: 'ops drill' });

    expect((await runCommand(['resume'], world.env)).code).toBe(0);
    await world.worker.waitForLine('kill switch off');
    expect(JSON.parse((await world.get('/readyz')).body)).toMatchObject({ ready: true, paused: false });
  });

  it('stops on SIGINT: drains, says so, exits 0', async () => {
    world.worker.child.kill('SIGINT');
    expect(await world.worker.exited).toEqual({ code: 0, signal: null });
    expect(world.worker.lines.some((line) => line.includes('"msg":"worker stopped"'))).toBe(true);
  });
});
