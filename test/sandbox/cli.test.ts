import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { cliInvocation } from '../support/cli.js';
import { call } from './http.js';

describe('treasury-bot sandbox command', () => {
  it('serves with the given tokens, never logs them, and stops cleanly on SIGTERM', async () => {
    const child = spawn(
      ...cliInvocation([
        'sandbox',
        '--port',
        '0',
        '--token',
        'cli-secret-token',
        '--read-token',
        'cli-read-token',
        '--step-ms',
        '0',
        '--seed',
        '9',
        '--faults',
        '{"createOrder":{"errorRate":1}}',
      ]),
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const [url, adminToken] = await new Promise<[string, string]>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        const match = /sandbox listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
        const admin = /control API token \(for \/_sandbox, this start only\): (\S+)/.exec(output);
        if (match && admin) resolve([match[1]!, admin[1]!]);
      });
      child.once('exit', (code) => reject(new Error(`sandbox exited early (${code}): ${output}`)));
    });
    const quote = await call(url, 'GET', '/client/quote?symbols=USDTBRL&amount=10', {
      token: 'cli-secret-token',
    });
    expect(quote.status).toBe(200);
    const order = await call(url, 'POST', '/client/order', {
      token: 'cli-secret-token',
      body: { quoteId: (quote.body as { quoteId: string }).quoteId },
    });
    expect(order.status).toBe(500);
    expect((await call(url, 'GET', '/client/balance', { token: 'cli-read-token' })).status).toBe(200);
    expect((await call(url, 'GET', '/client/balance', { token: 'sandbox-demo-token' })).status).toBe(401);
    // The control API takes the token made for this start, printed once; not a client token (on the first
    // release the first --token, or the public demo token, opened it).
    expect((await call(url, 'GET', '/_sandbox/ledger', { token: adminToken })).status).toBe(200);
    expect((await call(url, 'GET', '/_sandbox/ledger', { token: 'cli-secret-token' })).status).toBe(403);
    expect(output.split(adminToken).length - 1).toBe(1);
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    const [code] = await exited;
    expect(code).toBe(0);
    expect(output).toContain('sandbox stopping');
    expect(output).not.toContain('cli-secret-token');
    expect(output).not.toContain('cli-read-token');
  });

  it('serves the accounts of --account, each with its read tokens and credit line, and never logs a token', async () => {
    const child = spawn(
      ...cliInvocation([
        'sandbox',
        '--port',
        '0',
        '--account',
        'acme:acme-token',
        '--account',
        'bravo:bravo:token',
        '--account-read-token',
        'acme:acme-read-token',
        '--account-credit',
        'acme:1000.00',
        '--credit-limit',
        '2500.00',
      ]),
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const { url, adminToken, output: log } = await listening(child);
    const credit = async (token: string) =>
      (await call(url, 'GET', '/client/balance', { token })).body.credit.total as string;
    expect(await credit('acme-token')).toBe('1000.00');
    expect(await credit('acme-read-token')).toBe('1000.00');
    expect(await credit('bravo:token')).toBe('2500.00');
    expect((await call(url, 'GET', '/client/balance', { token: 'sandbox-demo-token' })).status).toBe(401);
    const requests = (await call(url, 'GET', '/_sandbox/requests', { token: adminToken })).body.requests;
    expect(requests.map((entry: { account: string }) => entry.account)).toEqual([
      'acme',
      'acme',
      'bravo',
      'unknown',
      'unknown',
    ]);
    const output = await stop(child, log);
    expect(output).toMatch(/"accounts":\["acme","bravo"\]/);
    for (const token of ['acme-token', 'acme-read-token', 'bravo:token']) expect(output).not.toContain(token);
  });

  it('refuses accounts it cannot serve with one line naming the flag and never the token', async () => {
    for (const [args, message] of [
      [['--account', 'acme:t-1', '--token', 't-2'], /--account cannot be combined with --token/],
      [['--account', 'Acme:t-1'], /account name "Acme" must be lowercase letters, digits and hyphens/],
      [['--account', 'acme'], /--account must be NAME:TOKEN \(the 1st one is not\)/],
      [['--account', 'a:t-1', '--account', 'b:t-1'], /accounts a and b share a token/],
      [
        ['--account', 'a:t-1', '--account-read-token', 'b:t-2'],
        /--account-read-token names "b", not an --account/,
      ],
      [['--account-credit', 'a:5.00'], /need the --account they name/],
      [['--account', 'a:t-1', '--account-credit', 'a:lots'], /--account-credit.*positive decimal/],
    ] as const) {
      const { code, stderr } = await runToExit(['sandbox', '--port', '0', ...args]);
      expect(code, args.join(' ')).toBe(1);
      expect(stderr).toMatch(message);
      expect(stderr).not.toMatch(/t-1|t-2|\n\s+at /);
    }
  });

  it('refuses a bad flag with a clear message and exit code 1', async () => {
    const { code, stderr } = await runToExit(['sandbox', '--step-ms', '-5']);
    expect(code).toBe(1);
    expect(stderr).toMatch(/--step-ms/);
  });

  it('refuses a fault setting it does not know, naming it', async () => {
    const { code, stderr } = await runToExit(['sandbox', '--faults', '{"quotes":{"errorRate":1}}']);
    expect(code).toBe(1);
    expect(stderr).toMatch(/--faults.*unknown route: quotes/);
  });
});

type Child = ReturnType<typeof spawn>;

/** Resolves once the sandbox says where it listens and prints the control API's token. */
async function listening(
  child: Child,
): Promise<{ url: string; adminToken: string; output: { text: string } }> {
  const output = { text: '' };
  child.stderr!.on('data', (chunk: Buffer) => {
    output.text += chunk.toString();
  });
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      output.text += chunk.toString();
      const match = /sandbox listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output.text);
      const admin = /control API token \(for \/_sandbox, this start only\): (\S+)/.exec(output.text);
      if (match && admin) resolve({ url: match[1]!, adminToken: admin[1]!, output });
    });
    child.once('exit', (code) => reject(new Error(`sandbox exited early (${code}): ${output.text}`)));
  });
}

/** SIGTERM, a clean exit (code 0), and everything the sandbox wrote. */
async function stop(child: Child, output: { text: string }): Promise<string> {
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const [code] = await exited;
  expect(code).toBe(0);
  return output.text;
}

async function runToExit(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(...cliInvocation(args), { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stderr };
}
