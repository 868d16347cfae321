/**
 * Parses cron text into the sets of allowed values per field. The accepted grammar is deliberately a subset
 * of what node-cron (which the engine uses to fire) accepts, so a schedule that validates here can always
 * be handed to node-cron: numbers, `*`, `?` (days only), ranges `a-b`, steps `*\/n` and `a-b/n`, lists, and
 * English month and weekday names. `L`, `W`, `#`, nicknames and wrap-around ranges are refused because
 * their meaning differs between cron implementations.
 */

export class CronSyntaxError extends Error {
  override readonly name = 'CronSyntaxError';
  readonly code = 'CRON_INVALID';
}

export interface CronSchedule {
  readonly text: string;
  readonly hasSeconds: boolean;
  /** Sorted ascending, no duplicates. */
  readonly seconds: readonly number[];
  readonly minutes: readonly number[];
  readonly hours: readonly number[];
  readonly daysOfMonth: ReadonlySet<number>;
  /** 1 = January. */
  readonly months: ReadonlySet<number>;
  /** 0 = Sunday (7 is accepted in the text and folded to 0). */
  readonly daysOfWeek: ReadonlySet<number>;
}

interface FieldSpec {
  readonly label: string;
  readonly min: number;
  readonly max: number;
  readonly names?: readonly string[];
  readonly allowsQuestionMark?: boolean;
}

const MONTH_NAMES = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const WEEKDAY_NAMES = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

const SECOND: FieldSpec = { label: 'second', min: 0, max: 59 };
const MINUTE: FieldSpec = { label: 'minute', min: 0, max: 59 };
const HOUR: FieldSpec = { label: 'hour', min: 0, max: 23 };
const DAY_OF_MONTH: FieldSpec = { label: 'day-of-month', min: 1, max: 31, allowsQuestionMark: true };
const MONTH: FieldSpec = { label: 'month', min: 1, max: 12, names: MONTH_NAMES };
const DAY_OF_WEEK: FieldSpec = {
  label: 'day-of-week',
  min: 0,
  max: 7,
  names: WEEKDAY_NAMES,
  allowsQuestionMark: true,
};

const cache = new Map<string, CronSchedule>();

/** Parses (and memoizes) cron text of 5 fields, or 6 with seconds first. Throws CronSyntaxError. */
export function parseCron(text: string): CronSchedule {
  const cached = cache.get(text);
  if (cached) return cached;
  const fields = text.trim().split(/\s+/);
  if (fields.length !== 5 && fields.length !== 6) {
    throw new CronSyntaxError(`expected 5 fields (or 6 with seconds first), found ${fields.length}`);
  }
  const hasSeconds = fields.length === 6;
  const [second, minute, hour, dayOfMonth, month, dayOfWeek] = hasSeconds ? fields : ['0', ...fields];
  const daysOfMonth = parseField(dayOfMonth!, DAY_OF_MONTH);
  const daysOfWeek = new Set([...parseField(dayOfWeek!, DAY_OF_WEEK)].map((day) => day % 7));
  // Vixie cron ORs the two day fields when both are restricted, node-cron ANDs them: refuse the ambiguity.
  if (daysOfMonth.size < 31 && daysOfWeek.size < 7) {
    throw new CronSyntaxError(
      'restricts both day-of-month and day-of-week; cron implementations disagree on whether that means ' +
        'either or both, so use only one of them and leave the other as *',
    );
  }
  const schedule: CronSchedule = {
    text,
    hasSeconds,
    seconds: sorted(parseField(second!, SECOND)),
    minutes: sorted(parseField(minute!, MINUTE)),
    hours: sorted(parseField(hour!, HOUR)),
    daysOfMonth,
    months: parseField(month!, MONTH),
    daysOfWeek,
  };
  if (cache.size > 1000) cache.clear();
  cache.set(text, schedule);
  return schedule;
}

function sorted(values: Set<number>): number[] {
  return [...values].sort((a, b) => a - b);
}

function parseField(field: string, spec: FieldSpec): Set<number> {
  const values = new Set<number>();
  if (field === '?' && spec.allowsQuestionMark) field = '*';
  for (const item of field.split(',')) {
    for (const value of parseItem(item, field, spec)) values.add(value);
  }
  return values;
}

function parseItem(item: string, field: string, spec: FieldSpec): number[] {
  const where = `${spec.label} field "${field}"`;
  const match = /^([^/]+)(?:\/(.*))?$/.exec(item);
  if (!match) throw new CronSyntaxError(`${where}: empty or malformed item "${item}"`);
  const [, base, stepText] = match;
  const step = stepText === undefined ? 1 : parseStep(stepText, where);
  let first: number;
  let last: number;
  if (base === '*') {
    first = spec.min;
    last = spec.max === 7 ? 6 : spec.max;
  } else if (base!.includes('-')) {
    const [fromText, toText, ...rest] = base!.split('-');
    if (rest.length > 0) throw new CronSyntaxError(`${where}: malformed range "${base}"`);
    first = parseValue(fromText!, where, spec);
    last = parseValue(toText!, where, spec);
    if (first > last) {
      throw new CronSyntaxError(`${where}: range "${base}" runs backwards; write it as two ranges`);
    }
  } else {
    if (stepText !== undefined) {
      throw new CronSyntaxError(`${where}: a step needs * or a range before it, as in */${stepText}`);
    }
    first = parseValue(base!, where, spec);
    last = first;
  }
  const values: number[] = [];
  for (let value = first; value <= last; value += step) values.push(value);
  return values;
}

function parseStep(text: string, where: string): number {
  if (!/^\d+$/.test(text) || Number(text) < 1) {
    throw new CronSyntaxError(`${where}: step "${text}" must be a whole number of at least 1`);
  }
  return Number(text);
}

function parseValue(text: string, where: string, spec: FieldSpec): number {
  const nameIndex = spec.names?.indexOf(text.toLowerCase()) ?? -1;
  if (nameIndex >= 0) return nameIndex + spec.min;
  if (!/^\d+$/.test(text)) {
    const names = spec.names ? ` or a name (${spec.names.join(', ')})` : '';
    throw new CronSyntaxError(`${where}: "${text}" is not a number${names}`);
  }
  const value = Number(text);
  if (value < spec.min || value > spec.max) {
    throw new CronSyntaxError(`${where}: ${value} is out of range ${spec.min}-${spec.max}`);
  }
  return value;
}
