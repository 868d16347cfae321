import type { Decimal } from '../money.js';
import { readDecimal } from './field-schemas.js';

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
  return [...checkBudgetKeys(document), ...checkApprovalKeys(document)];
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
