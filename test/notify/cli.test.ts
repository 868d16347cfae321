import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createTestDatabase } from '../support/database.js';
import { runCommand, writeWorkerFiles } from '../support/worker-process.js';
import { type HttpReceiver, startHttpReceiver } from './support/receivers.js';

const onPostgres = inject('treasuryDatabase').backend === 'postgres';
if (!onPostgres) {
  process.stderr.write(
    '\n!!! notify/cli.test.ts: `notifications` SKIPPED: the command and the test share the database only on PostgreSQL\n\n',
  );
}

const SECRET = `whsec_${randomBytes(24).toString('base64')}`;

describe('notify test and notifications commands', () => {
  let receiver: HttpReceiver;
  let env: Record<string, string>;
  const verifier = new Webhook(SECRET);

  beforeAll(async () => {
    receiver = await startHttpReceiver(({ headers, body }) => {
      try {
        verifier.verify(body, headers as Record<string, string>);
        return 200;
      } catch {
        return 401;
      }
    });
    env = {
      ...(await writeWorkerFiles(
        'name: x\nkind: dca\nsymbol: USDTBRL\namount: "1"\nschedule: "0 0 1 1 *"\n',
        `notifications:
  channels:
    erp: { type: webhook, url: "${receiver.url}", secret: { env: ERP_SECRET } }
    refused: { type: slack, webhookUrl: "${receiver.url.replace('/hook', '/slack-secret-path')}" }
`,
      )),
      ERP_SECRET: SECRET,
    };
  });
  afterAll(() => receiver?.close());

  it('sends a signed test message and prints the answer', async () => {
    const { code, stdout, stderr } = await runCommand(['notify', 'test', 'erp', '--json'], env);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const printed = JSON.parse(stdout);
    expect(printed).toMatchObject({ channel: 'erp', result: 'sent', detail: 'HTTP 200' });
    expect(receiver.requests.at(-1)!.headers['webhook-id']).toBe(printed.id);
    expect(JSON.parse(receiver.requests.at(-1)!.body)).toMatchObject({ type: 'test', id: printed.id });
  });

  it('exits 1 on a refusal, without printing the secret URL, and on an unknown channel', async () => {
    const refused = await runCommand(['notify', 'test', 'refused'], env);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toMatch(/^refused: rejected \(HTTP 401/);
    expect(refused.stdout + refused.stderr).not.toContain('slack-secret-path');
    const unknown = await runCommand(['notify', 'test', 'pager'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe(
      'treasury-bot: CHANNEL_UNKNOWN: no notification channel named "pager" (configured: erp, refused)\n',
    );
  });

  it.skipIf(!onPostgres)('lists recent messages with status and attempts', async () => {
    const test = await createTestDatabase('postgres', { routeNotifications: () => ['erp'] });
    try {
      await test.database.notifications.enqueueNow([
        { type: 'kill_switch', subject: 'kill_switch', occurredAt: new Date(), data: { paused: true } },
      ]);
      const json = await runCommand(['notifications', '--json'], { ...env, DATABASE_URL: test.url! });
      expect(json.code).toBe(0);
      const { notifications } = JSON.parse(json.stdout);
      expect(notifications).toHaveLength(1);
      expect(notifications[0]).toMatchObject({
        type: 'kill_switch',
        channel: 'erp',
        status: 'pending',
        attempts: 0,
        data: { paused: true },
      });
      const human = await runCommand(['notifications'], { ...env, DATABASE_URL: test.url! });
      expect(human.stdout).toMatch(/^id +type +subject +channel +status +attempts/);
      expect(human.stdout).toContain('kill_switch');
    } finally {
      await test.drop();
    }
  });
});
