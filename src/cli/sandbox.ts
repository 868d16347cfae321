import { randomBytes } from 'node:crypto';
import { type Command, InvalidArgumentError, Option } from 'commander';
// What help and the option parsers need, eagerly, from files of their own; the simulator and its web
// framework when the command runs. The faults' schema brings zod (~6 MB of RSS on `--version`), kept so that
// a bad --faults stays commander's argument error; every command that reads settings loads zod anyway.
import { BacktestInputError } from '../backtest/input-error.js';
import { DEFAULT_MAX_GAP_MS, type PriceSeries, readPriceFile } from '../backtest/price-series.js';
import { parseDecimal } from '../money.js';
import { createLogger } from '../observability/logger.js';
import { faultConfigSchema } from '../sandbox/faults.js';
import type { FaultConfig, RunningSandbox, SandboxAccountOptions } from '../sandbox/index.js';
import { parseDuration } from '../strategy/duration.js';

const STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const;

interface SandboxFlags {
  port: number;
  host: string;
  token: string[];
  readToken: string[];
  account: string[];
  accountReadToken: string[];
  accountCredit: string[];
  adminToken?: string;
  stepMs: number;
  seed: number;
  price: string;
  creditLimit: string;
  webhookFormat: 'json' | 'msgpack';
  faults?: FaultConfig;
  prices?: string;
  speed: number;
  maxGap: number;
}

export function registerSandboxCommands(program: Command): void {
  program
    .command('sandbox')
    .description('run the simulator of the purchase service')
    .option('--port <n>', 'port to listen on (0: any free port)', parseInteger('--port', 0, 65_535), 8080)
    .option('--host <address>', 'address to listen on', '127.0.0.1')
    .option('--token <token>', 'full-access bearer token (repeatable; default: the demo token)', collect, [])
    .option('--read-token <token>', 'read-only bearer token (repeatable)', collect, [])
    // Tokens are read without a commander parser: its message for a refused value would repeat the token.
    .option(
      '--account <name:token>',
      'an account of its own (orders, quotes, credit line, webhooks) and its full-access token (repeatable; ' +
        "instead of --token and --read-token; the first is the control API's default)",
      collect,
      [],
    )
    .option(
      '--account-read-token <name:token>',
      'a read-only token of an --account (repeatable)',
      collect,
      [],
    )
    .option(
      '--account-credit <name:decimal>',
      'the credit line in BRL of an --account (repeatable; default --credit-limit)',
      collectAccountCredit,
      [],
    )
    .option(
      '--admin-token <token>',
      'token of the /_sandbox control API (default: a new random one, printed once at start)',
    )
    .option(
      '--step-ms <n>',
      'lifecycle step interval per order; 0 = manual steps only',
      parseInteger('--step-ms', 0, 86_400_000),
      1000,
    )
    .option(
      '--seed <n>',
      'seed of the price walk and fault decisions',
      parseInteger('--seed', 0, 2 ** 32 - 1),
      1,
    )
    .option('--price <decimal>', 'centre of the price random walk', parsePrice, '5.4000')
    .option(
      '--prices <file>',
      'quote from a recorded series (CSV timestamp,price, as `backtest` reads it) instead of the random walk',
    )
    .option('--speed <n>', 'with --prices: replay N times faster than real time', parseSpeed, 1)
    .option(
      '--max-gap <duration>',
      'with --prices: longest allowed gap between two rows',
      parseGap,
      DEFAULT_MAX_GAP_MS,
    )
    .option(
      '--credit-limit <decimal>',
      'credit line in BRL (of each account without --account-credit)',
      parsePrice,
      '1000000.00',
    )
    .addOption(
      new Option('--webhook-format <format>', 'body format of webhook deliveries')
        .choices(['json', 'msgpack'])
        .default('json'),
    )
    .option(
      '--faults <json>',
      'faults from the start, as the control API takes them, e.g. \'{"createOrder":{"errorRate":0.1}}\'',
      parseFaults,
    )
    .action(runSandbox);
}

async function runSandbox(flags: SandboxFlags): Promise<void> {
  const { DEMO_TOKEN, SandboxOptionsError, startSandbox } = await import('../sandbox/index.js');
  const tokens = flags.token.length > 0 ? flags.token : [DEMO_TOKEN];
  const accounts = readAccounts(flags);
  if (typeof accounts === 'string') return refuse(accounts);
  // The control API can change faults and read every order: its token is never the public demo token. Without
  // one given, a fresh one is made for this start and printed once, below, outside the (scrubbing) log.
  const adminToken = flags.adminToken ?? randomBytes(24).toString('base64url');
  // The demo token is public (it is in the source); any token the operator chose is a secret.
  const accountTokens = (accounts ?? []).flatMap((account) => [account.token, ...(account.readTokens ?? [])]);
  const secrets = [...flags.token, ...flags.readToken, ...accountTokens, adminToken];
  const logger = createLogger({ name: 'sandbox', secrets });
  let series: PriceSeries | undefined;
  if (flags.prices !== undefined) {
    try {
      series = await readPriceFile(flags.prices, { maxGapMs: flags.maxGap });
    } catch (error) {
      if (!(error instanceof BacktestInputError)) throw error;
      return refuse(error.message);
    }
  }
  let sandbox: RunningSandbox;
  try {
    sandbox = await startSandbox({
      port: flags.port,
      host: flags.host,
      ...(accounts === undefined ? { tokens, readTokens: flags.readToken } : { accounts }),
      adminToken,
      stepMs: flags.stepMs,
      seed: flags.seed,
      price: flags.price,
      creditLimit: flags.creditLimit,
      webhookFormat: flags.webhookFormat,
      ...(flags.faults && { faults: flags.faults }),
      ...(series && { replay: { series, speed: flags.speed } }),
      logger,
    });
  } catch (error) {
    if (!(error instanceof SandboxOptionsError)) throw error;
    return refuse(error.message);
  }
  logger.info(
    {
      url: sandbox.url,
      demoToken: flags.token.length === 0 && accounts === undefined ? DEMO_TOKEN : undefined,
      ...(accounts === undefined
        ? { fullTokens: tokens.length, readTokens: flags.readToken.length }
        : { accounts: sandbox.accounts }),
      stepMs: flags.stepMs,
      seed: flags.seed,
      ...(series && {
        replay: { file: flags.prices, rows: series.length, from: new Date(series.first), speed: flags.speed },
      }),
    },
    `sandbox listening at ${sandbox.url}`,
  );
  if (flags.adminToken === undefined) {
    process.stdout.write(`sandbox control API token (for /_sandbox, this start only): ${adminToken}\n`);
  }
  const signal = await new Promise<string>((resolve) => {
    for (const name of STOP_SIGNALS) process.once(name, () => resolve(name));
  });
  logger.info({ signal }, 'sandbox stopping');
  await sandbox.close();
  logger.flush();
}

/** A user error: one line on stderr, exit code 1, nothing started. */
function refuse(message: string): void {
  process.stderr.write(`${message}\n`);
  process.exitCode = 1;
}

/**
 * The accounts of --account, --account-read-token and --account-credit; undefined without --account (one
 * account from --token and --read-token), or the message refusing them. Names are checked by the sandbox;
 * a message here never repeats a token.
 */
function readAccounts(flags: SandboxFlags): SandboxAccountOptions[] | string | undefined {
  if (flags.account.length === 0) {
    if (flags.accountReadToken.length > 0 || flags.accountCredit.length > 0) {
      return '--account-read-token and --account-credit need the --account they name';
    }
    return undefined;
  }
  if (flags.token.length > 0 || flags.readToken.length > 0) {
    return '--account cannot be combined with --token or --read-token: give each account its tokens';
  }
  const accounts = new Map<string, SandboxAccountOptions>();
  for (const [index, value] of flags.account.entries()) {
    const [name, token] = splitNamed(value);
    if (token === '') return `--account must be NAME:TOKEN (the ${ordinal(index + 1)} one is not)`;
    if (accounts.has(name)) return `--account ${name} is given twice`;
    accounts.set(name, { name, token });
  }
  for (const [index, value] of flags.accountReadToken.entries()) {
    const [name, token] = splitNamed(value);
    if (token === '') return `--account-read-token must be NAME:TOKEN (the ${ordinal(index + 1)} one is not)`;
    const account = accounts.get(name);
    if (account === undefined) return `--account-read-token names ${JSON.stringify(name)}, not an --account`;
    account.readTokens = [...(account.readTokens ?? []), token];
  }
  for (const value of flags.accountCredit) {
    const [name, creditLimit] = splitNamed(value);
    const account = accounts.get(name);
    if (account === undefined) return `--account-credit names ${JSON.stringify(name)}, not an --account`;
    account.creditLimit = creditLimit;
  }
  return [...accounts.values()];
}

/** NAME:REST at the first colon (names have none; tokens may); REST is '' without one. */
function splitNamed(value: string): [string, string] {
  const colon = value.indexOf(':');
  return colon < 0 ? [value, ''] : [value.slice(0, colon), value.slice(colon + 1)];
}

function ordinal(n: number): string {
  return n === 1 ? '1st' : n === 2 ? '2nd' : n === 3 ? '3rd' : `${n}th`;
}

function collectAccountCredit(value: string, previous: string[]): string[] {
  const [name, credit] = splitNamed(value);
  if (name === '' || credit === '')
    throw new InvalidArgumentError('must be NAME:DECIMAL, e.g. acme:250000.00.');
  parsePrice(credit);
  return [...previous, value];
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

function parseInteger(flag: string, min: number, max: number): (value: string) => number {
  return (value) => {
    const number = /^\d+$/.test(value) ? Number(value) : Number.NaN;
    if (!(number >= min && number <= max)) {
      throw new InvalidArgumentError(`${flag} must be an integer from ${min} to ${max}.`);
    }
    return number;
  };
}

function parseFaults(value: string): FaultConfig {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new InvalidArgumentError('must be a JSON object, e.g. \'{"quote":{"latencyMs":200}}\'.');
  }
  const result = faultConfigSchema.safeParse(parsed);
  if (result.success) return result.data as FaultConfig;
  const problems = result.error.issues.map((issue) => {
    const at = issue.path.join('.');
    return issue.code === 'unrecognized_keys'
      ? `unknown ${at ? `key under ${at}` : 'route'}: ${issue.keys.join(', ')}`
      : `${at}: ${issue.message}`;
  });
  throw new InvalidArgumentError(problems.join('; '));
}

function parsePrice(value: string): string {
  try {
    if (parseDecimal(value, 'value').greaterThan(0)) return value;
  } catch {
    // Reported below in commander's own words.
  }
  throw new InvalidArgumentError('must be a positive decimal like "5.4000".');
}

function parseSpeed(value: string): number {
  const speed = /^\d+(\.\d+)?$/.test(value) ? Number(value) : Number.NaN;
  if (!(speed > 0 && speed <= 1_000_000)) {
    throw new InvalidArgumentError('must be a number above 0 and up to 1000000, e.g. 1 or 60.');
  }
  return speed;
}

function parseGap(value: string): number {
  const ms = parseDuration(value);
  if (ms === undefined || ms <= 0) throw new InvalidArgumentError('must be a duration like 90m, 1h or 1d.');
  return ms;
}
