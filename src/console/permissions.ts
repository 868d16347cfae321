/**
 * Who may do what in the console, enforced on the server for every request. Approvers see everything and act
 * on four-eyes control (approve or reject parked cycles; add, approve and revoke envelopes); they do not
 * operate the worker, and operators do not approve: segregation of duties. An admin may do everything. Who
 * may not approve their own request (an envelope's creator, the same person twice) is the approval domain's
 * rule (src/control), not a role's. The REST API's tokens hold the same roles and go through this same table.
 */
import type { FastifyInstance } from 'fastify';
import type { Role } from '../db/index.js';

export type Permission = 'read' | 'operate' | 'approve' | 'administer';

/**
 * What a route of the console's scope declares in its `config.requires`: the permission it needs, or `public`
 * (the login form, the stylesheet and script). A route that declares nothing cannot be registered.
 */
export type Access = Permission | 'public';

declare module 'fastify' {
  interface FastifyContextConfig {
    requires?: Access;
    /** A request a page makes by itself (the overview's poll): it does not keep a session alive. */
    passive?: boolean;
  }
}

const GRANTS: Record<Role, readonly Permission[]> = {
  viewer: ['read'],
  operator: ['read', 'operate'],
  approver: ['read', 'approve'],
  admin: ['read', 'operate', 'approve', 'administer'],
};

export function allows(role: Role, permission: Permission): boolean {
  return GRANTS[role].includes(permission);
}

/** Deny by default: a route of the scope that does not say who may use it is a startup error. */
export function requireAccessDeclarations(scope: FastifyInstance, what: string): void {
  scope.addHook('onRoute', (route) => {
    if (route.config?.requires === undefined) {
      throw new Error(
        `${what} route ${String(route.method)} ${route.url} declares nothing in config.requires`,
      );
    }
  });
}
