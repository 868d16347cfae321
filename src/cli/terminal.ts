/**
 * What every command shares at the terminal. Output: `--json` gives one JSON document with decimals as text
 * and instants as ISO text; otherwise aligned human text; errors become one line on stderr. Input: checks of
 * operator arguments, each failing with one sentence that names the argument, the expected form and what
 * was given. Whatever is printed for a person has its control characters escaped (src/printable.ts): a
 * name or reason from the database cannot forge a line or steer the terminal.
 */
import type { Settings } from '../config/index.js';
import type { AccountScope } from '../db/index.js';
import { type Decimal, isDecimal, parseDecimal, toDecimalText } from '../money.js';
import { scrubSecrets } from '../observability/logger.js';
import { printable } from '../printable.js';

/** Converts domain values to plain JSON: Decimal → decimal text, Date → ISO 8601. */
export function toJsonValue(value: unknown): unknown {
  if (isDecimal(value)) return toDecimalText(value);
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map(toJsonValue);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, toJsonValue(item)]));
  }
  return value;
}

export function printJson(value: unknown, secrets: readonly string[]): void {
  process.stdout.write(`${scrubSecrets(JSON.stringify(toJsonValue(value)), secrets)}\n`);
}

export function printLines(lines: readonly string[], secrets: readonly string[]): void {
  process.stdout.write(`${scrubSecrets(lines.map(printable).join('\n'), secrets)}\n`);
}

/** The value as one JSON document with --json, else the lines `human` renders (rendered only then). */
export function printResult(
  json: boolean | undefined,
  value: unknown,
  human: () => readonly string[],
  secrets: readonly string[],
): void {
  if (json) printJson(value, secrets);
  else printLines(human(), secrets);
}

/** `key  value` lines for a record, nested keys dotted, keys aligned. */
export function renderRecord(record: object): string[] {
  const pairs: [string, string][] = [];
  const walk = (value: unknown, prefix: string) => {
    const plain = toJsonValue(value);
    if (typeof plain === 'object' && plain !== null && !Array.isArray(plain)) {
      for (const [key, item] of Object.entries(value as object))
        walk(item, prefix ? `${prefix}.${key}` : key);
    } else {
      pairs.push([
        prefix,
        plain === null || plain === undefined
          ? '-'
          : typeof plain === 'string'
            ? plain
            : JSON.stringify(plain),
      ]);
    }
  };
  walk(record, '');
  for (const pair of pairs) pair[1] = printable(pair[1]);
  const width = Math.max(0, ...pairs.map(([key]) => key.length));
  return pairs.map(([key, value]) => `${key.padEnd(width)}  ${value}`);
}

/** A left-aligned table with a header row. */
export function renderTable(columns: readonly string[], cells: readonly (readonly string[])[]): string[] {
  // Escaped before measuring, so that the columns line up as printed.
  const rows = cells.map((row) => row.map(printable));
  const widths = columns.map((column, index) =>
    Math.max(column.length, ...rows.map((row) => row[index]?.length ?? 0)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, index) => cell.padEnd(widths[index] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(columns), ...rows.map(line)];
}

export function cell(value: unknown): string {
  const plain = toJsonValue(value);
  if (plain === undefined || plain === null) return '-';
  return typeof plain === 'string' ? plain : JSON.stringify(plain);
}

/** One line: `treasury-bot: CODE: message`, never a stack, never a secret. */
export function printErrorLine(error: unknown, secrets: readonly string[]): void {
  const code =
    typeof error === 'object' && error !== null && typeof (error as { code?: unknown }).code === 'string'
      ? (error as { code: string }).code
      : 'ERROR';
  const message = error instanceof Error ? error.message : String(error);
  const line = `treasury-bot: ${code}: ${printable(message.replace(/\s*\n\s*/g, '; '))}`;
  process.stderr.write(`${scrubSecrets(line, secrets)}\n`);
}

export class CliArgumentError extends Error {
  override readonly name = 'CliArgumentError';
  readonly code = 'INVALID_ARGUMENT';
}

/**
 * The person a decision is recorded for: `--by`, else TREASURY_ACTOR. There is no login fallback: an approval
 * names who gave it.
 */
export async function declaredPerson(
  by: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  const person = by?.trim() || env.TREASURY_ACTOR?.trim();
  if (!person) throw new CliArgumentError('say who acts: give --by PERSON or set TREASURY_ACTOR');
  // Loaded here: the rule's module brings the database layer, which this file must not load for every command.
  const { checkPerson } = await import('../control/index.js');
  checkPerson(person);
  return person;
}

/** The option of every command whose rows are accounts' (issue 35). */
export const ACCOUNT_OPTION = [
  '--account <name>',
  "only this account's rows (default: every account)",
] as const;

/**
 * The rows a command shows: those of the account `--account` names, which must be one of the settings', or
 * every account's. The one scope the reads below take (src/db/account-scope.ts).
 */
export async function accountScope(
  flag: string | undefined,
  settings: Pick<Settings, 'accounts'>,
): Promise<AccountScope> {
  // Loaded here, as the rule of person names is: this file must not load the database layer for every command.
  const { AccountNotInScopeError, EVERY_ACCOUNT, narrowScope } = await import('../db/index.js');
  try {
    return narrowScope(
      EVERY_ACCOUNT,
      flag,
      settings.accounts.map((account) => account.name),
    );
  } catch (error) {
    if (error instanceof AccountNotInScopeError) throw new CliArgumentError(`--account: ${error.message}`);
    throw error;
  }
}

/** A positive decimal argument; `name` is how the error names it (the argument or the option). */
export function parseAmount(text: string, name = 'AMOUNT'): Decimal {
  try {
    const amount = parseDecimal(text, name);
    if (amount.gt(0)) return amount;
  } catch {
    // Reported below with the expected form.
  }
  throw new CliArgumentError(`${name} must be a positive decimal like 2500.00 (got ${JSON.stringify(text)})`);
}

export function parseSymbol(text: string): string {
  if (/^[A-Za-z0-9]{2,20}$/.test(text)) return text.toUpperCase();
  throw new CliArgumentError(`SYMBOL must be letters and digits like USDTBRL (got ${JSON.stringify(text)})`);
}

export function parseCount(option: string, text: string | undefined, max?: number): number | undefined {
  if (text === undefined) return undefined;
  const value = /^\d{1,6}$/.test(text) ? Number(text) : Number.NaN;
  if (value >= 1 && (max === undefined || value <= max)) return value;
  const range = max === undefined ? 'a whole number from 1' : `a whole number from 1 to ${max}`;
  throw new CliArgumentError(`${option} must be ${range} (got ${JSON.stringify(text)})`);
}

export function parseChoice<T extends string>(option: string, text: string, choices: readonly T[]): T {
  if ((choices as readonly string[]).includes(text)) return text as T;
  throw new CliArgumentError(`${option} must be one of ${choices.join(', ')} (got ${JSON.stringify(text)})`);
}

export function parseInstant(option: string, text: string | undefined): Date | undefined {
  if (text === undefined) return undefined;
  const date = new Date(text);
  if (/^\d{4}-\d{2}-\d{2}/.test(text) && !Number.isNaN(date.getTime())) return date;
  throw new CliArgumentError(`${option} must be an ISO 8601 date or date-time (got ${JSON.stringify(text)})`);
}
