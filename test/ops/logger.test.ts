import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger, type LoggerSettings, lineDestination } from '../../src/observability/logger.js';

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

describe("the worker's line destination", () => {
  let folder: string;
  beforeEach(async () => {
    folder = await mkdtemp(join(tmpdir(), 'tb-lines-'));
  });
  afterEach(async () => {
    await rm(folder, { recursive: true, force: true });
  });

  it('gathers lines logged on different turns of the event loop into one write', async () => {
    const file = join(folder, 'worker.log');
    const destination = lineDestination(file);
    await once(destination, 'ready');
    const logger = createLogger({ destination });
    logger.info({ cycle: 1 }, 'cycle placed');
    // A destination that wrote each line would have sent the first one by now.
    await nextTurn();
    logger.info({ cycle: 2 }, 'cycle placed');
    const [bytes] = (await once(destination, 'write')) as [number];
    const text = await readFile(file, 'utf8');
    expect(bytes).toBe(Buffer.byteLength(text));
    expect(
      text
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line).cycle),
    ).toEqual([1, 2]);
    destination.end();
  });

  it('writes the lines still held when the process exits', async () => {
    const file = join(folder, 'exit.log');
    const logger = fileURLToPath(new URL('../../src/observability/logger.ts', import.meta.url));
    // A file opens asynchronously (the worker's fd 1 is open from the start): the line is logged once it is.
    const script = `import { once } from 'node:events';
      import { createLogger, lineDestination } from ${JSON.stringify(logger)};
      const destination = lineDestination(${JSON.stringify(file)});
      await once(destination, 'ready');
      createLogger({ destination }).info('last words');
      process.exit(3);`;
    const run = promisify(execFile)(process.execPath, [
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      script,
    ]);
    await expect(run).rejects.toMatchObject({ code: 3 });
    expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({ msg: 'last words' });
  });
});
