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

async function runToExit(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(...cliInvocation(args), { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stderr };
}
