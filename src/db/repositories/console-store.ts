/**
 * The web console's part of the database: people and sessions, the audit log, the audited actions and the
 * pages' reads, the REST API's tokens, on the same connection as the engine's repositories.
 */
import { connectionOf, type Database } from '../database.js';
import { type ApiTokensRepository, createApiTokensRepository } from './api-tokens.js';
import { type AuditRepository, createAuditRepository } from './audit.js';
import { type ConsoleActions, createConsoleActions } from './console-actions.js';
import { type ConsoleReads, createConsoleReads } from './console-reads.js';
import { createPeopleRepository, type PeopleRepository } from './people.js';
import { createSecondFactorRepository, type SecondFactorRepository } from './second-factor.js';
import { createSsoPeopleRepository, type SsoPeopleRepository } from './sso-people.js';

export interface ConsoleStore {
  people: PeopleRepository;
  /** The people of single sign-on, known by their provider's issuer and subject. */
  ssoPeople: SsoPeopleRepository;
  audit: AuditRepository;
  actions: ConsoleActions;
  reads: ConsoleReads;
  secondFactor: SecondFactorRepository;
  /** The REST API's bearer tokens and idempotency keys. */
  apiTokens: ApiTokensRepository;
}

export function openConsoleStore(database: Database, clock: () => Date = () => new Date()): ConsoleStore {
  const db = connectionOf(database).drizzle;
  return {
    people: createPeopleRepository(db, clock),
    ssoPeople: createSsoPeopleRepository(db, clock),
    audit: createAuditRepository(db, clock),
    actions: createConsoleActions(db, clock, database.notifications),
    reads: createConsoleReads(db),
    secondFactor: createSecondFactorRepository(db, clock),
    apiTokens: createApiTokensRepository(db, clock),
  };
}
