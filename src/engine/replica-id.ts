import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

/**
 * Who owns a claimed slot or a lease: host, process and a random suffix, because a restarted container can
 * reuse both the hostname and the pid of the process it replaces.
 */
export function createReplicaId(): string {
  return `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
}
