/**
 * What a token can do through the REST API, each the same operation the console and the command line run
 * (src/control, the console's audited actions, the engine's operator actions, the strategy versions'
 * approval, the worker's `once`), with the token's name as the acting person: the domain's rules and its
 * audit rows are theirs. An approval is a person's act (four-eyes control): a token approves only as the
 * enabled approver it is named after, by the same rule as everywhere else. The bodies are checked for their
 * shape here, naming the field; what they mean is the operation's to judge.
 */
import { z } from 'zod';
import { createApprovalControl, requireEveryAccount, versionSummary } from '../control/index.js';
import { inScope } from '../db/index.js';
import { resolveUnsureCycle } from '../engine/index.js';
import { MoneyFormatError, parseDecimal } from '../money.js';
import { type ApiCall, defineOperation, idParam, type Operation } from './operation.js';
import { ApiProblem } from './problems.js';
import { cycleInScope } from './read-operations.js';
import { CycleApprovalResult, Envelope, VersionSummary } from './review-schemas.js';
import { ControlState, CycleReport, Cycle as CycleSchema, Resolution } from './schemas.js';

/** Decimal text as the answers write it, read into a Decimal: never a JSON number. */
const money = z
  .string()
  .regex(/^-?\d+(\.\d+)?$/, { error: 'expected decimal text like "1234.56"' })
  .transform((text, context) => {
    try {
      return parseDecimal(text, 'value');
    } catch (error) {
      if (!(error instanceof MoneyFormatError)) throw error;
      context.issues.push({ code: 'custom', message: 'expected at most 40 digits', input: text });
      return z.NEVER;
    }
  });
const instant = z.iso.datetime({ offset: true }).transform((text) => new Date(text));
const reason = z.string().trim().min(1).max(500);
const nothing = z.strictObject({});

/**
 * A token limited to some accounts reaches the recorded strategies of those only. A strategy new in the files
 * is recorded once a version of it runs: until then only a token of every account reaches it.
 */
async function requireStrategyInScope(call: ApiCall<unknown, unknown, unknown>, name: string): Promise<void> {
  if (call.scope.accounts === null) return;
  const strategy = await call.context.database.strategies.get(name);
  if (!strategy || !inScope(call.scope, strategy.account)) {
    throw new ApiProblem('STRATEGY_NOT_FOUND', `no strategy named "${name}" was ever recorded`);
  }
}

/** The envelope's id, when the token's accounts reach its strategy's account. */
async function envelopeInScope(call: ApiCall<unknown, unknown, unknown>, id: number): Promise<number> {
  const account = await call.context.store.reads.accountOfEnvelope(id);
  if (account === null || !inScope(call.scope, account)) {
    throw new ApiProblem('ENVELOPE_NOT_FOUND', `no envelope with id ${id}`);
  }
  return id;
}

export const ACT_OPERATIONS: readonly Operation[] = [
  defineOperation({
    id: 'pause',
    method: 'POST',
    path: '/kill-switch/pause',
    summary: 'Pause: every replica stops placing orders within a second',
    requires: 'operate',
    body: z.strictObject({ reason: reason.optional() }),
    answer: ControlState,
    async run(call) {
      requireEveryAccount(call.scope, 'the kill switch');
      return call.context.store.actions.pauseAll(
        call.token.name,
        call.body.reason ?? 'paused through the API',
      );
    },
  }),
  defineOperation({
    id: 'resume',
    method: 'POST',
    path: '/kill-switch/resume',
    summary: 'Release the kill switch',
    requires: 'operate',
    body: nothing,
    answer: ControlState,
    async run(call) {
      requireEveryAccount(call.scope, 'the kill switch');
      return call.context.store.actions.resumeAll(call.token.name);
    },
  }),
  defineOperation({
    id: 'approveCycle',
    method: 'POST',
    path: '/cycles/:id/approve',
    summary: 'Approve a parked cycle; the last approval needed lets a worker buy it at a fresh quote',
    requires: 'approve',
    params: z.strictObject({ id: idParam }),
    body: z.strictObject({ maxPrice: money.optional() }),
    answer: CycleApprovalResult,
    async run(call) {
      const cycle = await cycleInScope(call, Number(call.params.id));
      const { maxPrice } = call.body;
      return createApprovalControl(call.context.database).approve(
        cycle.id,
        call.token.name,
        maxPrice === undefined ? {} : { maxPrice },
      );
    },
  }),
  defineOperation({
    id: 'rejectCycle',
    method: 'POST',
    path: '/cycles/:id/reject',
    summary: 'Reject a parked cycle: it ends without an order',
    requires: 'approve',
    params: z.strictObject({ id: idParam }),
    body: z.strictObject({ reason }),
    answer: CycleSchema,
    async run(call) {
      const cycle = await cycleInScope(call, Number(call.params.id));
      return createApprovalControl(call.context.database).reject(cycle.id, call.token.name, call.body.reason);
    },
  }),
  defineOperation({
    id: 'resolveCycle',
    method: 'POST',
    path: '/cycles/:id/resolve',
    summary: 'Settle an unsure cycle: adopt the service order that is its, or declare that none was placed',
    requires: 'operate',
    params: z.strictObject({ id: idParam }),
    body: z.discriminatedUnion('resolution', [
      z.strictObject({
        resolution: z.literal('order'),
        order: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, { error: 'expected a service order id' }),
      }),
      z.strictObject({ resolution: z.literal('not_placed') }),
    ]),
    answer: Resolution,
    async run(call) {
      const { database, accounts } = call.context;
      const cycle = await cycleInScope(call, Number(call.params.id));
      const { body } = call;
      // The cycle's own account's service is the one asked, with its own token.
      const client = accounts.get(cycle.account)?.client;
      if (body.resolution === 'order' && !client) {
        throw new ApiProblem(
          'SERVICE_NOT_CONFIGURED',
          `adopting an order reads it from the purchase service of account ${cycle.account}, and this process has none: use the API of \`treasury-bot run\`, or give the account its url and token for \`treasury-bot console\``,
        );
      }
      const result = await resolveUnsureCycle(
        {
          database,
          ...(client ? { accounts: new Map([[cycle.account, { name: cycle.account, client }]]) } : {}),
        },
        cycle.id,
        body.resolution === 'order' ? { kind: 'order', serviceOrderId: body.order } : { kind: 'not_placed' },
        call.token.name,
      );
      return {
        cycle: result.cycle,
        order: result.order ? { ...result.order, placedAt: result.order.serviceTimestamp } : null,
      };
    },
  }),
  defineOperation({
    id: 'addEnvelope',
    method: 'POST',
    path: '/envelopes',
    summary:
      'A new envelope: what a strategy may buy without asking, active once its approvers (not its creator) approve it',
    requires: 'approve',
    status: 201,
    body: z.strictObject({
      strategy: z.string().min(1).max(200),
      maxOrder: money,
      maxTotal: money,
      maxPrice: money.optional(),
      from: instant,
      until: instant,
    }),
    answer: Envelope,
    async run(call) {
      const { strategy, maxOrder, maxTotal, maxPrice, from, until } = call.body;
      await requireStrategyInScope(call, strategy);
      return createApprovalControl(call.context.database).addEnvelope(
        { strategy, maxOrder, maxTotal, maxPrice: maxPrice ?? null, validFrom: from, validUntil: until },
        call.token.name,
      );
    },
  }),
  defineOperation({
    id: 'approveEnvelope',
    method: 'POST',
    path: '/envelopes/:id/approve',
    summary: 'Approve an envelope (its creator cannot)',
    requires: 'approve',
    params: z.strictObject({ id: idParam }),
    body: nothing,
    answer: Envelope,
    async run(call) {
      const id = await envelopeInScope(call, Number(call.params.id));
      return createApprovalControl(call.context.database).approveEnvelope(id, call.token.name);
    },
  }),
  defineOperation({
    id: 'revokeEnvelope',
    method: 'POST',
    path: '/envelopes/:id/revoke',
    summary: 'Revoke an envelope: it never charges again',
    requires: 'approve',
    params: z.strictObject({ id: idParam }),
    body: nothing,
    answer: Envelope,
    async run(call) {
      const id = await envelopeInScope(call, Number(call.params.id));
      return createApprovalControl(call.context.database).revokeEnvelope(id, call.token.name);
    },
  }),
  defineOperation({
    id: 'approveStrategyVersion',
    method: 'POST',
    path: '/strategies/:name/versions/:version/approve',
    summary: 'Approve a waiting strategy version: running workers run it from their next look',
    requires: 'approve',
    params: z.strictObject({ name: z.string().min(1).max(200), version: idParam }),
    body: nothing,
    answer: VersionSummary,
    async run(call) {
      const { name, version } = call.params;
      await requireStrategyInScope(call, name);
      const approved = await call.context.database.strategyVersions.approve(
        name,
        Number(version),
        call.token.name,
      );
      return versionSummary(approved);
    },
  }),
  defineOperation({
    id: 'runOnce',
    method: 'POST',
    path: '/strategies/:name/once',
    summary: 'Run one cycle of the strategy now, as `treasury-bot once --strategy NAME` does',
    requires: 'operate',
    params: z.strictObject({ name: z.string().min(1).max(200) }),
    body: z.strictObject({ slot: instant.optional() }),
    answer: CycleReport,
    async run(call) {
      const { name } = call.params;
      await requireStrategyInScope(call, name);
      const { runOnce, clock } = call.context;
      if (!runOnce) {
        throw new ApiProblem(
          'WORKER_NOT_RUNNING',
          'this process runs no cycles (`treasury-bot console`): use the API of a replica of `treasury-bot run`',
        );
      }
      const report = await runOnce(name, call.body.slot ?? clock());
      // The cycle records what it did; the audit log records who asked for it.
      await call.context.store.audit.append({
        actor: call.token.name,
        action: 'cycle.run_once',
        subject: `strategy:${name}`,
        after: report,
      });
      return report;
    },
  }),
];
