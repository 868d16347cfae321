import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/index.js';
import { runCommand } from '../support/worker-process.js';
import { OPS_SECRET, OPS_TOKEN, type OpsWorld, startOpsWorld } from './support/ops-world.js';

const STRATEGIES = `name: leak-dca
kind: dca
symbol: USDTBRL
amount: "100.00"
schedule: "* * * * * *"
timezone: UTC
guards:
  minCreditAvailable: "1000.00"
---
name: leak-plain
kind: dca
symbol: USDTBRL
amount: "100.00"
schedule: "0 0 1 1 *"
timezone: UTC
`;

// Debug level: the lines most likely to carry request details are printed too. The backfill reads the
// webhook logs, whose entries carry the registered url (with the secret in its path).
const SETTINGS = `log:
  level: debug
engine:
  reload:
    watch: false
tracking:
  poll:
    intervalMs: 200
    minDelayMs: 200
  balance:
    intervalMs: 500
  backfill:
    intervalMs: 1000
`;

const WRONG_SECRET = 'wrongHook-Bv5Nq8Xe1Ka3';

/** Every form in which a value could show up: as is, URL-encoded, inside a JSON string. */
function forms(secret: string): string[] {
  return [...new Set([secret, encodeURIComponent(secret), JSON.stringify(secret).slice(1, -1)])];
}

function expectNoSecret(where: string, text: string): void {
  for (const secret of [OPS_TOKEN, OPS_SECRET, WRONG_SECRET])
    for (const form of forms(secret)) expect(text.includes(form), `${where} contains ${form}`).toBe(false);
}

/**
 * Invariant 8 from outside the process: with a known token and webhook secret, through successes and error
 * paths (a 500 fault, a 401 for a token the service does not know, webhooks with a wrong secret or a bad
 * body), neither appears in any line the worker or a command prints, in /metrics, or in `status --json`.
 */
describe.skipIf(inject('treasuryDatabase').backend !== 'postgres')('secrets in operator output', () => {
  let world: OpsWorld;
  let stranger: RunningSandbox;

  beforeAll(async () => {
    world = await startOpsWorld({ strategies: STRATEGIES, settings: SETTINGS, logLevel: 'debug' });
    // A service that does not know the worker's token: every call is a 401.
    stranger = await startSandbox({ tokens: ['someone-elses-token-000'] });
  });
  afterAll(async () => {
    await world?.close();
    await stranger?.close();
  });

  it('never prints the token or the webhook secret, on success or on error paths', async () => {
    const outputs: [string, string][] = [];
    await world.worker.waitForLine('webhooks registered and verified');
    await world.worker.waitForLine('"outcome":"placed"');
    await world.worker.waitForLine('"result":"stored","msg":"webhook event received"');

    // Every route answers 500 until a cycle, the tracker and the balance snapshot have each failed once.
    world.sandbox.setFaults({ '*': { errorRate: 1 } });
    await world.worker.waitForLine('"errorCode":"API_SERVER_ERROR"');
    await world.worker.waitForLine('"msg":"balance snapshot failed"');
    world.sandbox.setFaults({});

    // Webhooks: a wrong secret (401), and a bad body that quotes the token (400).
    expect((await world.post(`/webhooks/${WRONG_SECRET}`, { event: 'order', data: {} })).status).toBe(401);
    const bad = await world.post(`/webhooks/${OPS_SECRET}`, { event: 'nonsense', data: { note: OPS_TOKEN } });
    expect(bad.status).toBe(400);
    await world.waitForLines('"msg":"webhook rejected"', 2);

    // The same token against a service that refuses it (a cycle run by `once`, an operator command), and
    // status and the webhook configuration; all at once, since each spends most of its time starting.
    const refused = { ...world.env, TREASURY_API_URL: stranger.url };
    const [once, balance, status, webhook] = await Promise.all([
      runCommand(['once', '--json', '--strategy', 'leak-plain'], refused),
      runCommand(['balance', '--json'], refused),
      runCommand(['status', '--json', '--limit', '50'], world.env),
      runCommand(['webhook', 'get', '--json'], world.env),
    ]);
    expect(once.code, `${once.stdout}\n${once.stderr}`).toBe(1);
    expect(JSON.parse(once.stdout).cycles).toEqual([
      expect.objectContaining({ strategy: 'leak-plain', outcome: 'failed' }),
    ]);
    expect(once.stderr).toContain('API_UNAUTHORIZED');
    expect(balance.code).toBe(1);
    expect(balance.stderr).toMatch(/^treasury-bot: API_UNAUTHORIZED: /);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout).recentCycles.length).toBeGreaterThan(1);
    // The service echoes the registered url, secret included; the command prints it scrubbed.
    expect(webhook.code, webhook.stderr).toBe(0);
    expect(webhook.stdout).toContain('/webhooks/[REDACTED]');
    for (const [name, run] of Object.entries({ once, balance, status, webhook }))
      outputs.push([`${name} stdout`, run.stdout], [`${name} stderr`, run.stderr]);

    const metrics = await world.get('/metrics');
    expect(metrics.body).toMatch(
      /^treasury_api_errors_total\{account="[\w-]+",operation="\w+",code="API_SERVER_ERROR"\} [1-9]/m,
    );
    outputs.push(['/metrics', metrics.body]);
    outputs.push(['/readyz', (await world.get('/readyz')).body]);

    world.worker.child.kill('SIGTERM');
    expect((await world.worker.exited).code).toBe(0);
    outputs.push(['worker output', world.worker.lines.join('\n')]);

    for (const [where, text] of outputs) expectNoSecret(where, text);
    // The scan had something to scan: each error path left its lines.
    const log = world.worker.lines.join('\n');
    for (const trace of [
      '"errorCode":"API_SERVER_ERROR"',
      '"status":401',
      '"status":400',
      'API_UNAUTHORIZED',
    ])
      expect(log + once.stderr, trace).toContain(trace);
  });
});
