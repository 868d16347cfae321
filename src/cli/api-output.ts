/**
 * Rendering of API results for operators: `--json` gives one JSON document with decimals as text and
 * instants as ISO text; otherwise aligned human text. Errors become one line on stderr.
 */
import { isDecimal, toDecimalText } from '../money.js';
import { scrubSecrets } from '../observability/logger.js';

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
  process.stdout.write(`${scrubSecrets(lines.join('\n'), secrets)}\n`);
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
  const width = Math.max(0, ...pairs.map(([key]) => key.length));
  return pairs.map(([key, value]) => `${key.padEnd(width)}  ${value}`);
}

/** A left-aligned table with a header row. */
export function renderTable(columns: readonly string[], rows: readonly (readonly string[])[]): string[] {
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
  const line = `treasury-bot: ${code}: ${message.replace(/\s*\n\s*/g, '; ')}`;
  process.stderr.write(`${scrubSecrets(line, secrets)}\n`);
}
