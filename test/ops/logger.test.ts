import { once } from 'node:events';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, type LoggerSettings } from '../../src/observability/logger.js';

const TOKEN = 'logTok-Hx7Pq2Wm9Zr4';
// Characters that change under URL encoding and JSON escaping.
const SECRET = 'hook/Se"cret+Value=9';

function captured(settings: LoggerSettings = {}) {
  const chunks: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      destination.emit('written');
      done();
    },
  });
  const logger = createLogger({ level: 'debug', secrets: [TOKEN, SECRET], destination, ...settings });
  return { logger, text: () => chunks.join(''), destination };
}

function expectClean(text: string): void {
  for (const secret of [TOKEN, SECRET])
    for (const form of [secret, encodeURIComponent(secret), JSON.stringify(secret).slice(1, -1)])
      expect(text, `found ${form}`).not.toContain(form);
}

describe('logger', () => {
  it('writes one JSON line per call with an ISO time and the level as a word', () => {
    const { logger, text } = captured();
    logger.info({ strategy: 'a', price: '5.40' }, 'cycle placed');
    const line = JSON.parse(text());
    expect(line).toMatchObject({ level: 'info', strategy: 'a', price: '5.40', msg: 'cycle placed' });
    expect(new Date(line.time).toISOString()).toBe(line.time);
  });

  it('scrubs the secrets from fields, URLs (plain and encoded), messages and error causes', () => {
    const { logger, text } = captured();
    const url = `https://svc.example/webhooks/${encodeURIComponent(SECRET)}?token=${TOKEN}`;
    logger.warn({ url, header: `Bearer ${TOKEN}`, nested: { note: SECRET } }, `calling ${url}`);
    const cause = new Error(`connect refused for Bearer ${TOKEN}`);
    logger.error({ err: new Error(`request to ${url} failed`, { cause }) }, 'order failed');
    const lines = text().trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expectClean(text());
    const failed = JSON.parse(lines[1]!);
    expect(failed.err.message).toBe(
      'request to https://svc.example/webhooks/[REDACTED]?token=[REDACTED] failed',
    );
    expect(failed.err.cause.message).toBe('connect refused for Bearer [REDACTED]');
    expect(JSON.parse(lines[0]!)).toMatchObject({
      header: 'Bearer [REDACTED]',
      nested: { note: '[REDACTED]' },
    });
  });

  it('censors fields named token or authorization whatever their value', () => {
    const { logger, text } = captured();
    logger.info({ token: 'short', headers: { authorization: 'Basic abc' } }, 'request');
    expect(JSON.parse(text())).toMatchObject({
      token: '[REDACTED]',
      headers: { authorization: '[REDACTED]' },
    });
  });

  it('censors them one level down too, and leaves the objects logged as they were', () => {
    const { logger, text } = captured();
    const account = { name: 'acme', token: 'session-7' };
    const headers = { authorization: 'Basic abc', accept: 'application/json' };
    logger.info({ account, headers, amount: '100.00' }, 'request');
    expect(JSON.parse(text())).toEqual(
      expect.objectContaining({
        account: { name: 'acme', token: '[REDACTED]' },
        headers: { authorization: '[REDACTED]', accept: 'application/json' },
        amount: '100.00',
      }),
    );
    expect(account.token).toBe('session-7');
    expect(headers.authorization).toBe('Basic abc');
  });

  it('ignores secrets shorter than 4 characters, which would mangle ordinary text', () => {
    const { logger, text } = captured({ secrets: ['ok'] });
    logger.info('ok, looks okay');
    expect(JSON.parse(text()).msg).toBe('ok, looks okay');
  });

  it('prints human lines in pretty mode, scrubbed as well', async () => {
    const { logger, text, destination } = captured({ pretty: true });
    logger.info({ url: `https://svc.example/?t=${TOKEN}` }, `webhook at /webhooks/${SECRET}`);
    logger.flush();
    // pino-pretty writes through a transform; the line arrives on a later tick.
    if (!text().includes('\n')) await once(destination, 'written');
    expect(text()).toMatch(/INFO.*webhook at \/webhooks\/\[REDACTED\]/);
    expect(text()).not.toMatch(/^\{/);
    expectClean(text());
  });
});
