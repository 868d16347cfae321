import { badRequest } from './errors.js';

export interface PageRequest {
  page: number;
  limit: number;
}

export interface IntRule {
  default: number;
  min: number;
  max: number;
  /** Outside [min, max]: clamp instead of answering 400. */
  clamp?: boolean;
}

/**
 * Reads one integer query parameter; 400 for anything but plain digits, or out of range unless clamped.
 * Any number of digits is read (a long one becomes Infinity), so a clamped parameter clamps them all.
 */
export function readIntParam(query: Record<string, unknown>, name: string, rule: IntRule): number {
  const raw = query[name];
  if (raw === undefined || raw === '') return rule.default;
  if (typeof raw !== 'string' || !/^-?\d+$/.test(raw)) {
    throw badRequest(`${name} must be an integer (got ${JSON.stringify(raw)})`);
  }
  const value = Number(raw);
  if (value >= rule.min && value <= rule.max) return value;
  if (rule.clamp) return Math.min(rule.max, Math.max(rule.min, value));
  throw badRequest(`${name} must be between ${rule.min} and ${rule.max} (got ${value})`);
}

export interface Page<T> {
  data: T[];
  pagination: { page: number; limit: number; total: number; totalPages: number };
}

export function paginate<T, R>(items: T[], request: PageRequest, map: (item: T) => R): Page<R> {
  const start = (request.page - 1) * request.limit;
  return {
    data: items.slice(start, start + request.limit).map(map),
    pagination: {
      page: request.page,
      limit: request.limit,
      total: items.length,
      totalPages: Math.ceil(items.length / request.limit),
    },
  };
}
