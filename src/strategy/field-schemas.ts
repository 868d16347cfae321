import { z } from 'zod';
import { Decimal } from '../money.js';
import { CronSyntaxError, parseCron } from './cron-expression.js';
import { parseDuration } from './duration.js';
import { describeValue } from './problems.js';
import { nextSlotAfter } from './slots.js';
import { instantOfDateTimeText, isKnownTimeZone } from './wall-clock.js';

/**
 * zod schemas for single values of a strategy file. Each message names the offending value; the key is
 * prefixed by whoever reports the problem. Money is decimal text only: a bare YAML number such as 2500.10
 * has already lost its written form (and digits beyond a double's precision) by the time we see it.
 */

const DECIMAL_TEXT = /^-?\d+(\.\d+)?$/;
const REQUIRED = 'is required';

export type Sign = 'positive' | 'nonNegative';

/** Decimal text, or a problem message about it. Shared with the cross-field checks. */
export function readDecimal(value: unknown, sign: Sign): Decimal | string {
  if (value === undefined) return REQUIRED;
  if (typeof value === 'number') {
    return `expected decimal text in quotes, like "${value}" (got ${describeValue(value)}; a bare YAML number can lose digits)`;
  }
  if (typeof value !== 'string' || !DECIMAL_TEXT.test(value)) {
    return `expected decimal text like "2500.00" (got ${describeValue(value)})`;
  }
  const decimal = new Decimal(value);
  if (sign === 'positive' && !decimal.greaterThan(0))
    return `must be greater than 0 (got ${describeValue(value)})`;
  if (sign === 'nonNegative' && decimal.isNegative())
    return `must not be negative (got ${describeValue(value)})`;
  return decimal;
}

export function money(sign: Sign) {
  return z.unknown().transform((value, ctx): Decimal => {
    const result = readDecimal(value, sign);
    if (typeof result === 'string') {
      ctx.addIssue({ code: 'custom', message: result });
      return z.NEVER;
    }
    return result;
  });
}

export function optionalMoney(sign: Sign) {
  return money(sign).optional();
}

/** A percentage in (0, 100]: a plain YAML number is fine here, it is not money and has few digits. */
export const percentage = z.unknown().transform((value, ctx): Decimal => {
  const text = typeof value === 'number' && Number.isFinite(value) ? String(value) : value;
  const parsed = typeof text === 'string' && DECIMAL_TEXT.test(text) ? new Decimal(text) : undefined;
  if (parsed?.greaterThan(0) && parsed.lessThanOrEqualTo(100)) return parsed;
  const message =
    value === undefined
      ? REQUIRED
      : `expected a percentage above 0 and at most 100, such as 80 (got ${describeValue(value)})`;
  ctx.addIssue({ code: 'custom', message });
  return z.NEVER;
});

/**
 * An account's name, the one rule for the settings' `accounts` and a strategy's `account:`: it goes into
 * paths (`/webhooks/NAME/…`), metric labels and files, so plain and short.
 */
export const ACCOUNT_NAME = /^[a-z0-9-]{1,40}$/;

/** The account at the service a strategy buys for: one of the settings' `accounts` names. */
export const accountName = z.string().superRefine((name, ctx) => {
  if (!ACCOUNT_NAME.test(name)) {
    ctx.addIssue({
      code: 'custom',
      message: `must be an account name: lowercase letters, digits and hyphens, at most 40 characters (got ${describeValue(name)})`,
    });
  }
});

export const strategyName = z.string().superRefine((name, ctx) => {
  if (!/^[a-z0-9]+(-[a-z0-9]+)*$/.test(name) || name.length > 64) {
    ctx.addIssue({
      code: 'custom',
      message: `must be lowercase letters, digits and single hyphens, at most 64 characters (got ${describeValue(name)})`,
    });
  }
});

export const symbol = z.string().superRefine((text, ctx) => {
  if (!/^[A-Z0-9]{2,20}$/.test(text)) {
    ctx.addIssue({
      code: 'custom',
      message: `expected a pair such as "USDTBRL" (got ${describeValue(text)})`,
    });
  }
});

export const timezone = z
  .string()
  .default('UTC')
  .superRefine((zone, ctx) => {
    if (!isKnownTimeZone(zone)) {
      ctx.addIssue({
        code: 'custom',
        message: `unknown IANA time zone ${describeValue(zone)} (expected a name such as "America/Sao_Paulo")`,
      });
    }
  });

/** Cron text that parses and matches at least once in the years ahead (so "0 0 30 2 *" is refused). */
export const cronText = z.string().superRefine((text, ctx) => {
  try {
    parseCron(text);
  } catch (error) {
    if (!(error instanceof CronSyntaxError)) throw error;
    ctx.addIssue({ code: 'custom', message: `invalid cron ${describeValue(text)}: ${error.message}` });
    return;
  }
  if (nextSlotAfter(text, 'UTC', new Date(Date.UTC(2000, 0, 1))) === undefined) {
    ctx.addIssue({ code: 'custom', message: `cron ${describeValue(text)} never matches a real date` });
  }
});

export function duration(options: { allowZero: boolean }) {
  return z.unknown().transform((value, ctx): number => {
    const milliseconds = typeof value === 'string' ? parseDuration(value) : undefined;
    if (milliseconds !== undefined && (options.allowZero || milliseconds > 0)) return milliseconds;
    const adjective = options.allowZero ? '' : 'non-zero ';
    const message =
      value === undefined
        ? REQUIRED
        : `expected a ${adjective}duration such as "30s", "15m", "1h", "1d" or "1h30m" (got ${describeValue(value)})`;
    ctx.addIssue({ code: 'custom', message });
    return z.NEVER;
  });
}

/**
 * A date and time as written, "2026-12-05T17:00" (in the strategy's `timezone`) or with an offset; kept as
 * text here because the zone is another key: toStrategy turns it into an instant.
 */
export const dateTimeText = z.unknown().transform((value, ctx): string => {
  if (typeof value === 'string' && instantOfDateTimeText(value, 'UTC') !== undefined) return value;
  const message =
    value === undefined
      ? REQUIRED
      : `expected a date and time such as "2026-12-05T17:00" (in the strategy's timezone) or "2026-12-05T17:00-03:00" (got ${describeValue(value)})`;
  ctx.addIssue({ code: 'custom', message });
  return z.NEVER;
});

/** A multiplier written "2x" (or "1.5x"): above 1, at most 10. */
export const multiplier = z.unknown().transform((value, ctx): Decimal => {
  const match = typeof value === 'string' ? /^(\d+(?:\.\d+)?)x$/.exec(value) : null;
  const factor = match ? new Decimal(match[1]!) : undefined;
  if (factor?.greaterThan(1) && factor.lessThanOrEqualTo(10)) return factor;
  const message =
    value === undefined
      ? REQUIRED
      : `expected a multiplier above 1x and at most 10x, such as "2x" (got ${describeValue(value)})`;
  ctx.addIssue({ code: 'custom', message });
  return z.NEVER;
});
