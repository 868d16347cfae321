/**
 * `treasury-bot notify test CHANNEL`: one test message straight to a configured channel, and what the
 * receiver answered. `treasury-bot notifications`: the outbox's recent messages with their status and
 * attempts. Channel secrets are scrubbed from everything printed.
 */
import type { Command } from 'commander';
import type { Database, NotificationRecord } from '../db/index.js';
import { cell, parseCount, printErrorLine, printJson, printLines, renderTable } from './terminal.js';

export function registerNotifyCommands(program: Command): void {
  program
    .command('notify')
    .description('notification channels')
    .command('test')
    .description('send a test message to a channel of notifications.channels and print the answer')
    .argument('<channel>', 'the channel name')
    .option('--json', 'print one JSON document on stdout')
    .action((channel: string, flags: { json?: boolean }) => runNotifyTest(channel, flags));
  program
    .command('notifications')
    .description('recent notifications with their channel, status and attempts')
    .option('--json', 'print one JSON document on stdout')
    .option('--limit <n>', 'how many to show (1 to 1000)', '50')
    .action((flags: { json?: boolean; limit: string }) => runNotifications(flags));
}

async function runNotifyTest(channel: string, flags: { json?: boolean }): Promise<void> {
  let secrets: string[] = [];
  try {
    const { channelSecrets, loadSettings } = await import('../config/index.js');
    const { sendTestMessage } = await import('../notify/index.js');
    const settings = loadSettings({ env: process.env });
    secrets = channelSecrets(settings.notifications);
    const outcome = await sendTestMessage(settings.notifications, channel);
    if (flags.json) printJson(outcome, secrets);
    else printLines([`${outcome.channel}: ${outcome.result} (${outcome.detail}), id ${outcome.id}`], secrets);
    if (outcome.result !== 'sent') process.exitCode = 1;
  } catch (error) {
    printErrorLine(error, secrets);
    process.exitCode = 1;
  }
}

async function runNotifications(flags: { json?: boolean; limit: string }): Promise<void> {
  let database: Database | undefined;
  let secrets: string[] = [];
  try {
    const limit = parseCount('--limit', flags.limit, 1000) ?? 50;
    const { openDatabaseFromSettings } = await import('../app.js');
    const { channelSecrets, loadSettings } = await import('../config/index.js');
    const settings = loadSettings({ env: process.env });
    secrets = channelSecrets(settings.notifications);
    ({ database } = await openDatabaseFromSettings(settings, { maxConnections: 2 }));
    const recent = await database.notifications.listRecent(limit);
    if (flags.json) printJson({ notifications: recent }, secrets);
    else printLines(render(recent), secrets);
  } catch (error) {
    printErrorLine(error, secrets);
    process.exitCode = 1;
  } finally {
    await database?.close();
  }
}

function render(records: readonly NotificationRecord[]): string[] {
  if (records.length === 0) return ['no notifications'];
  return renderTable(
    ['id', 'type', 'subject', 'channel', 'status', 'attempts', 'occurred', 'sent', 'last error'],
    records.map((record) => [
      record.id,
      record.type,
      record.subject,
      record.channel,
      record.status,
      String(record.attempts),
      cell(record.occurredAt),
      cell(record.sentAt),
      cell(record.lastError),
    ]),
  );
}
