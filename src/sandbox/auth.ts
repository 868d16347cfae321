import type { FastifyRequest } from 'fastify';
import { SandboxHttpError } from './errors.js';

/** What a route needs: any valid token, a full-access token, or the admin token of the control API. */
export type Access = 'read' | 'write' | 'admin';
type Role = 'read' | 'write' | 'admin';

const RANK: Record<Role, number> = { read: 0, write: 1, admin: 2 };

export interface TokenSets {
  tokens: readonly string[];
  readTokens: readonly string[];
  adminToken: string;
}

/**
 * Checks the bearer token against the route's required access: 401 when it is missing or unknown, 403 when
 * it is known but not allowed. Messages never repeat the token.
 */
export function createAuthorizer(sets: TokenSets): (request: FastifyRequest, access: Access) => void {
  const roles = new Map<string, Role>();
  for (const token of sets.readTokens) roles.set(token, 'read');
  for (const token of sets.tokens) roles.set(token, 'write');
  roles.set(sets.adminToken, 'admin');
  return (request, access) => {
    const header = request.headers.authorization;
    if (header === undefined) throw new SandboxHttpError(401, 'missing bearer token');
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (match === null) throw new SandboxHttpError(401, 'authorization header is not "Bearer <token>"');
    const role = roles.get(match[1]!);
    if (role === undefined) throw new SandboxHttpError(401, 'unknown bearer token');
    if (RANK[role] < RANK[access]) {
      throw new SandboxHttpError(403, `this token may not ${describe(access)}`);
    }
  };
}

function describe(access: Access): string {
  return access === 'admin' ? 'use the sandbox control API' : 'change anything (read-only token)';
}
