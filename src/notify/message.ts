/**
 * What a person reads: a title per event type, the event's figures as `name: value` lines, and the console
 * page of its subject. The same lines feed Slack (mrkdwn), email (plain text and HTML) and nothing else:
 * the generic webhook sends the data itself.
 */
import type { NotificationData, NotificationType, NotificationValue } from './event-types.js';

/** A message as the channels take it: what the outbox stores, minus the bookkeeping. */
export interface OutgoingMessage {
  id: string;
  type: NotificationType;
  subject: string;
  occurredAt: Date;
  data: NotificationData;
}

const TITLES: Readonly<Record<NotificationType, string>> = {
  order_placed: 'Order placed',
  order_settled: 'Order settled',
  order_failed: 'Order failed',
  cycle_unsure: 'Order outcome unknown: reconciliation will tell',
  discrepancy: 'Order differs from what was asked: strategy halted',
  strategy_halted: 'Strategy halted: an operator must decide',
  kill_switch: 'Kill switch',
  budget_reached: 'Budget reached',
  guard_blocked: 'Guard blocked a buy',
  settlement_stuck: 'Settlement stuck',
  approval_needed: 'Approval needed',
  approval_decided: 'Approval decided',
  replica_lost: 'Replica lost: its work was taken over',
  target_completed: 'Target completed',
  target_behind: 'Target behind its pace with little of its window left',
  target_missed: 'Target missed: its window ended short of the total',
  daily_digest: 'Daily digest',
  test: 'Test message from treasury-bot',
};

export function titleOf(message: OutgoingMessage): string {
  if (message.type === 'kill_switch')
    return message.data.paused === true ? 'Kill switch ON: no orders are placed' : 'Kill switch off';
  return TITLES[message.type];
}

/** `name: value` lines; a list of records becomes one indented line per record. */
export function linesOf(data: NotificationData): string[] {
  return Object.entries(data).flatMap(([name, value]) => {
    if (Array.isArray(value) && value.every(isRecord)) {
      return [`${name}:`, ...value.map((item) => `  - ${inline(item as NotificationData)}`)];
    }
    return [`${name}: ${show(value)}`];
  });
}

/** The console page of the message's subject, when the console's address is known. */
export function consoleLink(subject: string, consoleUrl: string | undefined): string | undefined {
  if (consoleUrl === undefined) return undefined;
  const [kind, ...rest] = subject.split(':');
  const name = rest.join(':');
  const pages: Record<string, string> = { order: 'orders', cycle: 'cycles', strategy: 'strategies' };
  const page = kind !== undefined && pages[kind] && name ? `${pages[kind]}/${encodeURIComponent(name)}` : '';
  return new URL(page, consoleUrl.endsWith('/') ? consoleUrl : `${consoleUrl}/`).toString();
}

export function plainText(message: OutgoingMessage, link: string | undefined): string {
  return [
    titleOf(message),
    '',
    ...linesOf(message.data),
    `at: ${message.occurredAt.toISOString()}`,
    ...(link ? ['', link] : []),
    '',
    `id: ${message.id}`,
  ].join('\n');
}

export function html(message: OutgoingMessage, link: string | undefined): string {
  const rows = linesOf(message.data).map((line) => `<li>${escapeHtml(line.trim())}</li>`);
  return [
    `<h2>${escapeHtml(titleOf(message))}</h2>`,
    `<ul>${rows.join('')}<li>at: ${escapeHtml(message.occurredAt.toISOString())}</li></ul>`,
    link ? `<p><a href="${escapeHtml(link)}">Open in the console</a></p>` : '',
    `<p style="color:#777">id: ${escapeHtml(message.id)}</p>`,
  ].join('\n');
}

/** Slack mrkdwn: `&`, `<` and `>` are its only control characters. */
export function slackText(message: OutgoingMessage, link: string | undefined): string {
  const escapeMrkdwn = (text: string) =>
    text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  return [
    `*${escapeMrkdwn(titleOf(message))}*`,
    ...linesOf(message.data).map(escapeMrkdwn),
    ...(link ? [`<${link}|Open in the console>`] : []),
  ].join('\n');
}

function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

function isRecord(value: NotificationValue): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function inline(record: NotificationData): string {
  return Object.entries(record)
    .map(([name, value]) => `${name}: ${show(value)}`)
    .join(', ');
}

function show(value: NotificationValue): string {
  if (value === null) return '-';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}
