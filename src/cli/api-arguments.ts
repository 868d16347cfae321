/**
 * Checks of operator input for the API commands, each failing with one sentence that names the argument,
 * the expected form and what was given.
 */
import { type Decimal, parseDecimal } from '../money.js';

export class CliArgumentError extends Error {
  override readonly name = 'CliArgumentError';
  readonly code = 'INVALID_ARGUMENT';
}

export function parseAmount(text: string): Decimal {
  try {
    const amount = parseDecimal(text, 'AMOUNT');
    if (amount.gt(0)) return amount;
  } catch {
    // Reported below with the expected form.
  }
  throw new CliArgumentError(`AMOUNT must be a positive decimal like 2500.00 (got ${JSON.stringify(text)})`);
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
