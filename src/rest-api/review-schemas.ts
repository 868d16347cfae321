/**
 * The shapes of what people review and decide through the REST API: strategies and their versions, parked
 * cycles and the decisions on them, envelopes, `report`'s figures and the audit log; registered with the
 * records' (schemas.ts) in the one registry the OpenAPI document is generated from.
 */
import { z } from 'zod';
import { GROUPINGS } from '../reports/index.js';
import { Cycle, component, Decimal, decimal, Instant, instant, text } from './schemas.js';

export const VersionSummary = component(
  'StrategyVersion',
  z.object({
    version: z.number().int(),
    state: z.enum(['running', 'approved', 'awaiting approval']),
    linesAdded: z.number().int(),
    linesRemoved: z.number().int(),
    configHash: z.string(),
    createdAt: Instant,
    createdBy: z.string(),
    approvedAt: instant,
    approvedBy: text,
  }),
);

export const StrategyList = component(
  'StrategyList',
  z.object({
    strategies: z.array(
      z.object({
        name: z.string(),
        kind: z.string(),
        account: z.string(),
        config: z.record(z.string(), z.unknown()),
        firstSeenAt: Instant,
        lastSeenAt: Instant,
        haltedAt: instant,
        haltReason: text,
        versions: z.array(VersionSummary),
      }),
    ),
  }),
);

export const Approvals = component(
  'ParkedCycles',
  z.object({
    approvals: z.array(
      z.object({
        cycle: Cycle,
        approversRequired: z.number().int(),
        parkedAt: Instant,
        expiresAt: Instant,
        parkedPrice: Decimal,
        defaultMaxPrice: Decimal,
        approvedBy: z.array(z.string()),
      }),
    ),
  }),
  'cycles parked for approval, oldest first',
);

export const CycleApprovalResult = component(
  'CycleApprovalResult',
  z.object({
    cycle: Cycle,
    approvedBy: z.array(z.string()),
    approversRequired: z.number().int(),
    approvedMaxPrice: decimal,
  }),
);

export const Envelope = component(
  'Envelope',
  z.object({
    id: z.number().int(),
    strategy: z.string(),
    maxOrder: Decimal,
    maxTotal: Decimal,
    maxPrice: decimal,
    validFrom: Instant,
    validUntil: Instant,
    approversRequired: z.number().int(),
    createdBy: z.string(),
    createdAt: Instant,
    activeAt: instant,
    revokedAt: instant,
    revokedBy: text,
    approvedBy: z.array(z.string()),
    spent: Decimal,
    room: Decimal,
  }),
);

export const EnvelopeList = component('EnvelopeList', z.object({ envelopes: z.array(Envelope) }));

const ReportGroup = z.object({
  group: z.string(),
  from: Instant,
  to: Instant,
  orders: z.number().int(),
  spent: Decimal,
  bought: Decimal,
  averageCost: decimal,
  lowestPrice: decimal,
  highestPrice: decimal,
  settledSpent: Decimal,
  unsettledSpent: Decimal,
  ordersWithoutQuantity: z.number().int(),
  skipped: z.record(z.string(), z.number().int()),
});

export const Report = component(
  'Report',
  z.object({
    from: Instant,
    to: Instant,
    timeZone: z.string(),
    by: z.enum(GROUPINGS),
    rounding: z.string(),
    groups: z.array(ReportGroup),
    total: ReportGroup,
    savings: z.array(
      z.object({
        strategy: z.string(),
        quotesSeen: z.number().int(),
        averageQuotedPrice: Decimal,
        averageCost: decimal,
        bought: Decimal,
        spent: Decimal,
        plainDcaCost: Decimal,
        savings: Decimal,
        savingsPct: decimal,
      }),
    ),
  }),
  'the figures of `treasury-bot report`',
);

export const AuditPage = component(
  'AuditPage',
  z.object({
    entries: z.array(
      z.object({
        id: z.number().int(),
        at: Instant,
        actor: z.string(),
        action: z.string(),
        subject: text,
        account: text,
        before: z.unknown(),
        after: z.unknown(),
      }),
    ),
    next: text,
  }),
  'newest first; an act through a token names the token as its actor',
);
