/**
 * Who may do what in the console, enforced on the server for every request. Approvers see everything and
 * will act on the approval queue (a later issue); they do not operate the worker: segregation of duties.
 */
import type { Role } from '../db/index.js';

export type Permission = 'read' | 'operate' | 'administer';

const GRANTS: Record<Role, readonly Permission[]> = {
  viewer: ['read'],
  operator: ['read', 'operate'],
  approver: ['read'],
  admin: ['read', 'operate', 'administer'],
};

export function allows(role: Role, permission: Permission): boolean {
  return GRANTS[role].includes(permission);
}
