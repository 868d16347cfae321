import { STATUS_CODES } from 'node:http';

/**
 * An answer the sandbox gives on purpose (400, 401, 403, 404, 409). Everything else that escapes a handler is
 * a sandbox defect and is answered as a plain 500 without details.
 */
export class SandboxHttpError extends Error {
  override readonly name = 'SandboxHttpError';
  readonly code: string;
  constructor(
    readonly statusCode: number,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.code = `SANDBOX_HTTP_${statusCode}`;
  }
}

export function badRequest(message: string): SandboxHttpError {
  return new SandboxHttpError(400, message);
}

export function notFound(message: string): SandboxHttpError {
  return new SandboxHttpError(404, message);
}

/** The error body of the assumptions table: `{ statusCode, error, message }`. */
export interface ErrorBody {
  statusCode: number;
  error: string;
  message: string;
}

export function errorBody(statusCode: number, message: string): ErrorBody {
  return { statusCode, error: STATUS_CODES[statusCode] ?? 'Error', message };
}
