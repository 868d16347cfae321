import { describe, expect, it } from 'vitest';
import { consoleHosts, loadSettings, planListeners } from '../../src/config/index.js';

const SECRET = 'a-webhook-secret-of-some-length';
const plan = (env: Record<string, string>) => planListeners(loadSettings({ env, cwd: '/nonexistent' }));

describe('where the worker listens', () => {
  it('keeps operations on loopback and starts the receiver only with a secret', () => {
    expect(plan({})).toEqual({ ops: { host: '127.0.0.1', port: 9464 } });
    expect(plan({ TREASURY_WEBHOOK_SECRET: SECRET })).toEqual({
      ops: { host: '127.0.0.1', port: 9464 },
      webhook: { host: '0.0.0.0', port: 8080 },
    });
  });

  it('takes both addresses, IPv6 in brackets', () => {
    expect(
      plan({
        TREASURY_OPS_ADDR: '[::1]:9100',
        TREASURY_WEBHOOK_ADDR: '10.0.0.5:0',
        TREASURY_WEBHOOK_SECRET: SECRET,
      }),
    ).toEqual({ ops: { host: '::1', port: 9100 }, webhook: { host: '10.0.0.5', port: 0 } });
  });

  it('keeps the deprecated TREASURY_HTTP_PORT for the receiver alone: the console never shares its listener', () => {
    const legacy = plan({ TREASURY_HTTP_PORT: '9000', TREASURY_WEBHOOK_SECRET: SECRET });
    expect(legacy).toEqual({
      ops: { host: '127.0.0.1', port: 9464 },
      webhook: { host: '0.0.0.0', port: 9000 },
      deprecation: expect.stringMatching(/TREASURY_WEBHOOK_ADDR/),
    });
    // Without a secret there is no receiver, and the old port serves nothing.
    expect(plan({ TREASURY_HTTP_PORT: '9000' })).toEqual({
      ops: { host: '127.0.0.1', port: 9464 },
      deprecation: expect.stringMatching(/TREASURY_WEBHOOK_ADDR/),
    });
    // The new setting wins; the old one is then ignored, and still named.
    const both = plan({
      TREASURY_HTTP_PORT: '9000',
      TREASURY_WEBHOOK_ADDR: '127.0.0.1:9100',
      TREASURY_WEBHOOK_SECRET: SECRET,
    });
    expect(both).toMatchObject({ webhook: { host: '127.0.0.1', port: 9100 } });
    expect(both.deprecation).toMatch(/ignored while TREASURY_WEBHOOK_ADDR is set/);
  });

  it('lets the console answer to the ops host it names and to TREASURY_CONSOLE_URL’s host', () => {
    const hosts = (env: Record<string, string>) => {
      const settings = loadSettings({ env, cwd: '/nonexistent' });
      return consoleHosts(settings, planListeners(settings).ops);
    };
    expect(hosts({})).toEqual(['127.0.0.1']);
    expect(hosts({ TREASURY_OPS_ADDR: '0.0.0.0:9464' })).toEqual([]);
    expect(
      hosts({ TREASURY_OPS_ADDR: '[fd00::5]:9464', TREASURY_CONSOLE_URL: 'https://[fd00::6]:8443/console' }),
    ).toEqual(['fd00::5', 'fd00::6']);
    expect(
      hosts({ TREASURY_OPS_ADDR: '[::]:9464', TREASURY_CONSOLE_URL: 'https://treasury.example.com' }),
    ).toEqual(['treasury.example.com']);
  });

  it.each(['9464', 'localhost', 'host:99999', ':9464', 'a b:1'])(
    'refuses the address %j, naming the variable',
    (addr) => {
      expect(() => plan({ TREASURY_OPS_ADDR: addr })).toThrow(/TREASURY_OPS_ADDR/);
    },
  );
});
