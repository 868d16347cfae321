/**
 * Every refusal of the REST API as an RFC 9457 problem document (`application/problem+json`), carrying the
 * project's stable error code: the API's own (a missing token, a refused role, a reused idempotency key) and
 * the domain's, raised by the same src/control, engine and repository operations the console and the CLI
 * call. One table gives each code its HTTP status and title; the reference page lists it. An error of no
 * known code is a bug: a 500 that says nothing of its message, logged with the details.
 */
import { PurchaseApiError } from '../api/index.js';
import { classifyDatabaseFailure } from '../db/index.js';
import { messageOf } from '../errors.js';

export const PROBLEM_MEDIA_TYPE = 'application/problem+json';

export const PROBLEMS = {
  TOKEN_MISSING: { status: 401, title: 'No API token was sent' },
  TOKEN_INVALID: { status: 401, title: 'The API token is not one of this deployment' },
  TOKEN_REVOKED: { status: 401, title: 'The API token was revoked' },
  TOKEN_EXPIRED: { status: 401, title: 'The API token has expired' },
  PERMISSION_DENIED: { status: 403, title: "The token's role does not allow this" },
  ACCOUNTS_LIMITED: { status: 403, title: 'This acts on every account; the token is limited to some' },
  HOST_NOT_SERVED: { status: 421, title: 'This listener does not answer to that host name' },
  NOT_FOUND: { status: 404, title: 'No such operation' },
  INVALID_ARGUMENT: { status: 400, title: 'A parameter or a field of the body is not valid' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, title: 'The body must be application/json' },
  BODY_TOO_LARGE: { status: 413, title: 'The body is too large' },
  IDEMPOTENCY_KEY_REUSED: { status: 422, title: 'The idempotency key was used for another request' },
  IDEMPOTENCY_KEY_IN_USE: {
    status: 409,
    title: 'The first request with this idempotency key is still running',
  },
  RATE_LIMITED: { status: 429, title: 'Too many requests with this token' },
  CYCLE_NOT_FOUND: { status: 404, title: 'No such cycle' },
  ENVELOPE_NOT_FOUND: { status: 404, title: 'No such envelope' },
  STRATEGY_NOT_FOUND: { status: 404, title: 'No such strategy' },
  STRATEGY_VERSION_NOT_FOUND: { status: 404, title: 'No such strategy version' },
  CYCLE_NOT_AWAITING_APPROVAL: { status: 409, title: 'The cycle does not wait for approval' },
  APPROVAL_EXPIRED: { status: 409, title: 'The cycle waited past its deadline' },
  ALREADY_APPROVED_BY_PERSON: { status: 409, title: 'This person already approved it' },
  APPROVER_IS_REQUESTER: { status: 409, title: 'Its creator cannot approve it' },
  ENVELOPE_REVOKED: { status: 409, title: 'The envelope was revoked' },
  PERSON_INVALID: { status: 403, title: 'Not a person who may decide' },
  PERSON_UNKNOWN: { status: 403, title: 'The token is named after no person who may approve' },
  PERSON_DISABLED: { status: 403, title: 'The person the token is named after is disabled' },
  PERSON_CANNOT_APPROVE: { status: 403, title: 'The person the token is named after may not approve' },
  INVALID_REQUEST: { status: 422, title: 'The request breaks a rule of the operation' },
  CYCLE_NOT_UNSURE: { status: 409, title: 'The cycle is not unsure' },
  ORDER_OWNED_BY_OTHER_CYCLE: { status: 409, title: 'The order belongs to another cycle' },
  ORDER_SYMBOL_MISMATCH: { status: 409, title: "The order's symbol is not the cycle's" },
  STRATEGY_HAS_UNSURE_CYCLES: { status: 409, title: 'The strategy still has unsure cycles' },
  STRATEGY_VERSION_APPROVED: { status: 409, title: 'The version was already approved' },
  STRATEGY_SELF_APPROVAL: { status: 403, title: 'Who recorded a version cannot approve it' },
  STRATEGY_NOT_APPROVED: { status: 409, title: 'The strategy has no approved version yet' },
  WORKER_NOT_RUNNING: { status: 503, title: 'No worker runs cycles in this process' },
  SERVICE_NOT_CONFIGURED: { status: 503, title: 'This process has no purchase service to read' },
  API_NOT_FOUND: { status: 409, title: 'The purchase service has no such order' },
  API_REJECTED: { status: 502, title: 'The purchase service refused the request' },
  API_UNAUTHORIZED: { status: 502, title: "The purchase service refused the worker's credentials" },
  API_FORBIDDEN: { status: 502, title: 'The purchase service refused the request' },
  API_SERVER_ERROR: { status: 502, title: 'The purchase service failed' },
  API_UNAVAILABLE: { status: 502, title: 'The purchase service is unreachable' },
  API_RATE_LIMITED: { status: 502, title: 'The purchase service asked the worker to slow down' },
  API_BAD_RESPONSE: { status: 502, title: 'The purchase service answered something unreadable' },
  API_INVALID_ARGUMENT: { status: 502, title: 'The purchase service refused an argument' },
  QUOTE_EXPIRED: { status: 502, title: 'The quote expired' },
  OUTCOME_UNKNOWN: { status: 502, title: 'What the purchase service did is not known' },
  DB_UNAVAILABLE: { status: 503, title: 'The database is unreachable' },
  DB_TIMEOUT: { status: 503, title: 'The database did not answer in time; the outcome is unknown' },
  DB_ERROR: { status: 500, title: 'The database refused a statement' },
  INTERNAL: { status: 500, title: 'Something went wrong on the server' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ProblemCode = keyof typeof PROBLEMS;

/** A problem raised by the API itself; `errors` names each field that was not valid. */
export class ApiProblem extends Error {
  override readonly name = 'ApiProblem';
  constructor(
    readonly code: ProblemCode,
    message: string,
    readonly errors?: { field: string; message: string }[],
  ) {
    super(message);
  }
}

export interface ProblemDocument {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ProblemCode;
  instance?: string;
  errors?: { field: string; message: string }[];
}

/** Where a code is explained: its row of the reference page. */
export const problemType = (code: ProblemCode) => `/api/v1/docs#problem-${code}`;

const isProblemCode = (code: string): code is ProblemCode => Object.hasOwn(PROBLEMS, code);

/**
 * The document of an error, and whether to log it (a bug or an outage). Only the domain's refusals show their
 * message: theirs are written for people, where a bug's or a database's may hold what must not leave.
 */
export function problemOf(error: unknown, instance: string): { problem: ProblemDocument; log: boolean } {
  const given = error instanceof Error ? (error as { code?: unknown }).code : undefined;
  let code: ProblemCode = 'INTERNAL';
  if (typeof given === 'string' && isProblemCode(given)) code = given;
  else if (error instanceof PurchaseApiError) code = 'API_SERVER_ERROR';
  else {
    const failure = classifyDatabaseFailure(error);
    if (failure !== 'INTERNAL') code = failure;
  }
  const { status, title } = PROBLEMS[code];
  const told = code !== 'INTERNAL' && !code.startsWith('DB_');
  const detail = told ? messageOf(error) : `${title}; the worker log has the details`;
  const errors = error instanceof ApiProblem ? error.errors : undefined;
  return {
    problem: {
      type: problemType(code),
      title,
      status,
      detail,
      code,
      instance,
      ...(errors ? { errors } : {}),
    },
    log: status >= 500,
  };
}
