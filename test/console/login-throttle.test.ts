import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  LOGIN_ADDRESS_FAILURES,
  LOGIN_FREE_FAILURES,
  LOGIN_HASHES_AT_ONCE,
} from '../../src/console/login-throttle.js';
import { hashPassword } from '../../src/console/passwords.js';
import { ConsoleClient, PASSWORD, type RunningConsole, startTestConsole } from './support.js';

/**
 * What a stranger can do to the console's login over real HTTP: guess one person's password (each guess
 * waits longer, but the person's own password is never refused for good), spray many names from one address
 * (capped), smuggle a long or odd name past the rules (refused before any lookup), and make the worker hash
 * passwords at will (a few at once; the rest refused early). Every refusal is counted and logged, and none
 * is written to the audit log. Addresses are told apart by X-Forwarded-For from the trusted proxy (loopback).
 */
describe('console login throttling', () => {
  let console: RunningConsole;
  let address = 0;
  /** A browser from an address of its own, so that the address cap of one test leaves the others alone. */
  const visitor = () => new ConsoleClient(console.url, { 'x-forwarded-for': `198.51.100.${++address}` });
  const later = (ms: number) => {
    console.now.value = new Date(console.now.value.getTime() + ms);
  };
  const refusals = async (reason: string) =>
    (await console.metrics.consoleLoginsRefused.get()).values.find((value) => value.labels.reason === reason)
      ?.value ?? 0;

  beforeAll(async () => {
    console = await startTestConsole();
  }, 60_000);
  afterAll(async () => {
    await console?.close();
  });
  beforeEach(() => {
    // Past every delay and window the previous test left.
    later(24 * 3_600_000);
  });

  it('makes each guess at a name wait longer, and lets the right password in once the wait is over', async () => {
    const statuses: number[] = [];
    for (let guess = 0; guess < LOGIN_FREE_FAILURES + 6; guess++) {
      statuses.push((await visitor().login('approver', 'guessing')).status);
    }
    // The free guesses are checked; then each guess, from any address, waits for the name's delay.
    expect(statuses).toEqual([...Array(LOGIN_FREE_FAILURES).fill(401), ...Array(6).fill(429)]);
    const early = await visitor().login('approver');
    expect(early.status).toBe(429);
    expect(early.body).toMatch(/wait \d+ seconds?/);
    // Not a lockout: once the delay passes, the person's password works, however many guesses came before.
    later(2_000);
    expect((await visitor().login('approver')).status).toBe(303);
    expect(await refusals('name_delayed')).toBe(7);
  });

  it('doubles the delay with each further wrong password', async () => {
    const waits: number[] = [];
    for (let attempt = 0; attempt < LOGIN_FREE_FAILURES + 6; attempt++) {
      const answer = await visitor().login('operator', 'guessing');
      const wait = /wait (\d+) seconds?/.exec(answer.body)?.[1];
      if (answer.status === 429 && wait !== undefined) {
        waits.push(Number(wait));
        later(Number(wait) * 1_000);
      }
    }
    expect(waits).toEqual([1, 2, 4]);
  });

  it(`caps the wrong passwords of one address across names at ${LOGIN_ADDRESS_FAILURES}`, async () => {
    const sprayer = visitor();
    const passwordHash = (await console.store.people.findByName('viewer'))!.passwordHash!;
    for (let name = 0; name < LOGIN_ADDRESS_FAILURES + 3; name++)
      await console.store.people.add({ name: `guess${name}`, role: 'viewer', passwordHash }, 'test-setup');
    const statuses: number[] = [];
    for (let name = 0; name < LOGIN_ADDRESS_FAILURES + 3; name++) {
      statuses.push((await sprayer.login(`guess${name}`, 'guessing')).status);
    }
    expect(statuses).toEqual([...Array(LOGIN_ADDRESS_FAILURES).fill(401), 429, 429, 429]);
    // The right password from that address waits too; from another address it is let through.
    expect((await sprayer.login('viewer')).status).toBe(429);
    expect((await visitor().login('viewer')).status).toBe(303);
    expect(await refusals('address_capped')).toBe(4);
  });

  it('refuses a name outside the person-name rule before looking it up: no truncation, no control characters', async () => {
    const long = `a${'b'.repeat(63)}`;
    const passwordHash = (await console.store.people.findByName('viewer'))!.passwordHash!;
    await console.store.people.add({ name: long, role: 'viewer', passwordHash }, 'test-setup');
    expect((await visitor().login(long)).status).toBe(303);
    // The same person's name with three more characters was cut to 64 and looked up.
    expect((await visitor().login(`${long}zzz`)).status).toBe(401);
    expect((await visitor().login('viewer\nana approval.approve cycle:7')).status).toBe(401);
    expect(await refusals('name_invalid')).toBe(2);
  });

  it('counts and logs a refused login, and writes nothing to the audit log for it', async () => {
    const before = await console.store.audit.list({ limit: 1000 });
    const lines = console.logLines.length;
    expect((await visitor().login('operator', 'not the password at all')).status).toBe(401);
    expect((await visitor().login('nobody-here', 'not the password at all')).status).toBe(401);
    expect((await visitor().login('x\u001b[2K\ry', 'not the password at all')).status).toBe(401);
    expect(await console.store.audit.list({ limit: 1000 })).toEqual(before);
    const logged = console.logLines.slice(lines).map((line) => JSON.parse(line) as Record<string, unknown>);
    const refused = logged.filter((line) => line.msg === 'console login refused');
    expect(refused.map((line) => [line.name, line.reason])).toEqual([
      ['operator', 'password'],
      ['nobody-here', 'password'],
      [undefined, 'name_invalid'],
    ]);
    expect(refused.map((line) => line.address)).toEqual(
      [1, 2, 3].map((n) => `198.51.100.${address - 3 + n}`),
    );
    expect(await refusals('password')).toBeGreaterThanOrEqual(2);
  });

  it(`hashes at most ${LOGIN_HASHES_AT_ONCE} passwords at once and refuses the rest early`, async () => {
    // A costlier hash than the other tests' people, so that the checks overlap in time.
    const passwordHash = await hashPassword(PASSWORD, { N: 2 ** 15, r: 8, p: 1 });
    await console.store.people.add({ name: 'slow', role: 'viewer', passwordHash }, 'test-setup');
    const clients = Array.from({ length: 8 }, () => visitor());
    const tokens = await Promise.all(clients.map((client) => client.csrfFrom('/login')));
    const answers = await Promise.all(
      clients.map((client, index) =>
        client.post('/login', { _csrf: tokens[index]!, name: 'slow', password: 'guessing slowly' }),
      ),
    );
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.filter((status) => status === 503).length).toBeGreaterThan(0);
    expect(statuses.every((status) => status === 401 || status === 503)).toBe(true);
    expect(await refusals('busy')).toBe(statuses.filter((status) => status === 503).length);
  });
});
