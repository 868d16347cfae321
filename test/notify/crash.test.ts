import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DEMO_TOKEN, type RunningSandbox, startSandbox } from '../../src/sandbox/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { type RunningCommand, replicaEnvironment, startCommand } from '../support/worker-process.js';
import { type HttpReceiver, startHttpReceiver } from './support/receivers.js';

const onPostgres = inject('treasuryDatabase').backend === 'postgres';
if (!onPostgres) {
  process.stderr.write(
    '\n!!! notify/crash.test.ts SKIPPED: a worker process sharing the test database needs a PostgreSQL server\n\n',
  );
}

const SECRET = `whsec_${randomBytes(24).toString('base64')}`;

const STRATEGIES = `name: notify-idle
kind: dca
symbol: USDTBRL
amount: "100.00"
schedule: "0 0 1 1 *"
enabled: false
`;

const settings = (url: string) => `engine:
  reload:
    watch: false
tracking:
  poll:
    enabled: false
  backfill:
    enabled: false
  balance:
    enabled: false
notifications:
  channels:
    erp: { type: webhook, url: "${url}", secret: { env: ERP_SECRET } }
  routes:
    # Only the event under test: the restarted worker also reports the killed one as replica_lost.
    - events: [order_failed]
      channels: [erp]
  delivery:
    intervalMs: 100
    timeoutMs: 1000
`;

/**
 * At least once across a crash: the worker is killed with SIGKILL while its delivery of a message is in
 * flight (sent, not yet answered), and the next worker delivers it under the same id once the dead one's
 * lease has run out.
 */
describe.skipIf(!onPostgres)('notifications across a SIGKILL', () => {
  let sandbox: RunningSandbox;
  let test: TestDatabase;
  let receiver: HttpReceiver;
  const workers: RunningCommand[] = [];
  let up = false;
  const hung: (() => void)[] = [];
  let firstArrival: () => void = () => {};
  const arrived = new Promise<void>((resolve) => {
    firstArrival = resolve;
  });
  const verifier = new Webhook(SECRET);

  beforeAll(async () => {
    sandbox = await startSandbox({ stepMs: 0 });
    test = await createTestDatabase('postgres', { routeNotifications: () => ['erp'] });
    receiver = await startHttpReceiver(({ headers, body }) => {
      firstArrival();
      // Down: the request is held unanswered until the test ends.
      if (!up) return new Promise<number>((resolve) => hung.push(() => resolve(599)));
      try {
        verifier.verify(body, headers as Record<string, string>);
        return 204;
      } catch {
        return 401;
      }
    });
  });
  afterAll(async () => {
    for (const worker of workers) worker.child.kill('SIGKILL');
    for (const release of hung) release();
    await receiver?.close();
    await sandbox?.close();
    await test?.drop();
  });

  it('delivers after restart a message whose delivery was cut by the kill', async () => {
    const env = {
      ...(await replicaEnvironment({
        strategiesYaml: STRATEGIES,
        settingsYaml: settings(receiver.url),
        databaseUrl: test.url!,
        apiUrl: sandbox.url,
        apiToken: DEMO_TOKEN,
      })),
      ERP_SECRET: SECRET,
    };
    const first = startCommand(['run'], env);
    workers.push(first);
    await first.waitForLine('worker started');

    // The event, written as the hooks write it: in the database, for the worker's loop to pick up.
    await test.database.notifications.enqueueNow([
      {
        type: 'order_failed',
        subject: 'strategy:notify-idle',
        occurredAt: new Date(),
        data: { reason: 'test' },
      },
    ]);
    await arrived;
    first.child.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    const [row] = await test.database.notifications.listRecent(1);
    expect(row).toMatchObject({ status: 'pending', attempts: 1 });

    up = true;
    const second = startCommand(['run'], env);
    workers.push(second);
    await second.waitForLine('worker started');
    await receiver.waitForAccepted(1);
    const accepted = receiver.requests.filter((request) => request.status === 204);
    expect(accepted).toHaveLength(1);
    expect(accepted[0]!.headers['webhook-id']).toBe(row!.id);
    await second.waitForLine('notification sent');
    expect((await test.database.notifications.listRecent(1))[0]).toMatchObject({
      id: row!.id,
      status: 'sent',
      attempts: 2,
    });
    second.child.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);
  }, 60_000);
});
