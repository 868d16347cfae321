import type { Decimal } from '../money.js';
import { CronSyntaxError } from './cron-expression.js';
import { readDecimal } from './field-schemas.js';
import { nextSlotAfter } from './slots.js';
import { FIAT_STEP } from './target.js';
import { instantOfDateTimeText, isKnownTimeZone } from './wall-clock.js';

/**
 * Checks that involve more than one key. They run on the raw document, independently of the per-key
 * schema, so that a typo elsewhere does not hide them: each check runs when the values it compares are
 * readable, and stays silent otherwise (the per-key schema reports those).
 */

export interface CrossIssue {
  path: string[];
  message: string;
}

export function checkAcrossKeys(document: Record<string, unknown>): CrossIssue[] {
  return [...checkBudgetKeys(document), ...checkApprovalKeys(document), ...checkTargetKeys(document)];
}

/**
 * A target: one total (spend or receive), a slice whose min is at most its max (and, for spend, at most the
 * total), and a window that ends after it starts and holds at least one slot of `every`.
 */
function checkTargetKeys(document: Record<string, unknown>): CrossIssue[] {
  if (document.kind !== 'target') return [];
  const issues: CrossIssue[] = [];
  const target = mapping(document.target);
  if (target && (target.spend === undefined) === (target.receive === undefined)) {
    const both = target.spend !== undefined;
    issues.push({
      path: ['target'],
      message: both
        ? 'set spend (fiat) or receive (crypto), not both'
        : 'set spend: "2000000.00" (fiat to spend) or receive: "370000.00" (crypto to receive)',
    });
  }
  const slice = mapping(document.slice);
  const min = readable(slice?.min);
  const max = readable(slice?.max);
  if (min?.lessThan(FIAT_STEP)) {
    issues.push({ path: ['slice', 'min'], message: `"${slice?.min}" is below the smallest order, 0.01` });
  }
  if (min && max && min.greaterThan(max)) {
    issues.push({ path: ['slice', 'min'], message: `"${slice?.min}" is above slice.max "${slice?.max}"` });
  }
  const spend = readable(target?.spend);
  if (spend && min?.greaterThan(spend)) {
    issues.push({
      path: ['slice', 'min'],
      message: `"${slice?.min}" is above the target's spend "${target?.spend}"`,
    });
  }
  issues.push(...checkTargetWindow(document));
  return issues;
}

function checkTargetWindow(document: Record<string, unknown>): CrossIssue[] {
  const window = mapping(document.window);
  const zone = document.timezone === undefined ? 'UTC' : document.timezone;
  if (!window || typeof zone !== 'string' || !isKnownTimeZone(zone)) return [];
  const { start: startText, end: endText } = window;
  const start = typeof startText === 'string' ? instantOfDateTimeText(startText, zone) : undefined;
  const end = typeof endText === 'string' ? instantOfDateTimeText(endText, zone) : undefined;
  if (start === undefined || end === undefined) return [];
  if (end <= start) {
    return [{ path: ['window', 'end'], message: `"${endText}" is not after window.start "${startText}"` }];
  }
  if (typeof document.every !== 'string') return [];
  let first: Date | undefined;
  try {
    first = nextSlotAfter(document.every, zone, new Date(start - 1));
  } catch (error) {
    if (error instanceof CronSyntaxError) return [];
    throw error;
  }
  if (first === undefined || first.getTime() >= end) {
    return [
      {
        path: ['every'],
        message: `"${document.every}" has no slot between window.start "${startText}" and window.end "${endText}"`,
      },
    ];
  }
  return [];
}

function mapping(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** `above` is read only with `required: above`, and that needs it. */
function checkApprovalKeys(document: Record<string, unknown>): CrossIssue[] {
  const approval = document.approval;
  if (approval === null || typeof approval !== 'object' || Array.isArray(approval)) return [];
  const { required, above } = approval as Record<string, unknown>;
  if (required === 'above' && above === undefined) {
    return [
      { path: ['approval'], message: 'required: above needs above: the order cost that needs approval' },
    ];
  }
  if ((required === 'never' || required === 'always') && above !== undefined) {
    return [
      {
        path: ['approval', 'above'],
        message: `is only read with required: above (got required: ${required})`,
      },
    ];
  }
  return [];
}

function checkBudgetKeys(document: Record<string, unknown>): CrossIssue[] {
  const issues: CrossIssue[] = [];
  const budget = document.budget;
  if (budget === null || typeof budget !== 'object' || Array.isArray(budget)) return issues;
  const { perDay: perDayText, perMonth: perMonthText } = budget as Record<string, unknown>;
  if (perDayText === undefined && perMonthText === undefined) {
    issues.push({ path: ['budget'], message: 'set perDay, perMonth or both (or remove budget)' });
    return issues;
  }
  const amount = readable(document.amount);
  const perDay = readable(perDayText);
  const perMonth = readable(perMonthText);
  if (amount && perDay?.lessThan(amount)) {
    issues.push({
      path: ['budget', 'perDay'],
      message: `"${perDayText}" is below amount "${document.amount}", so no order could ever be placed`,
    });
  }
  if (perMonth && perDay && perMonth.lessThan(perDay)) {
    issues.push({
      path: ['budget', 'perMonth'],
      message: `"${perMonthText}" is below budget.perDay "${perDayText}"`,
    });
  } else if (perMonth && amount && perMonth.lessThan(amount)) {
    issues.push({
      path: ['budget', 'perMonth'],
      message: `"${perMonthText}" is below amount "${document.amount}", so no order could ever be placed`,
    });
  }
  return issues;
}

function readable(value: unknown): Decimal | undefined {
  const result = readDecimal(value, 'positive');
  return typeof result === 'string' ? undefined : result;
}
