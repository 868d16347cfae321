import type { z } from 'zod';
import { ApiBadResponseError } from './errors.js';

/**
 * Validates a decoded body against a wire schema. A mismatch becomes one API_BAD_RESPONSE naming the
 * operation and the first offending field (`data[2].price`), never a TypeError from deep inside.
 */
export function validateBody<T>(schema: z.ZodType<T>, body: unknown, operation: string, status?: number): T {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const field = issue ? formatPath(issue.path) : '(body)';
  const reason = issue?.message ?? 'does not match the expected shape';
  const more = result.error.issues.length > 1 ? ` (and ${result.error.issues.length - 1} more)` : '';
  throw new ApiBadResponseError(`${operation}: bad response: field ${field}: ${reason}${more}`, {
    operation,
    status,
    field,
    cause: result.error,
  });
}

export function formatPath(path: readonly PropertyKey[]): string {
  if (path.length === 0) return '(body)';
  let text = '';
  for (const key of path) {
    if (typeof key === 'number') text += `[${key}]`;
    else text += text === '' ? String(key) : `.${String(key)}`;
  }
  return text;
}
