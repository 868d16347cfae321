import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { allows } from '../../src/console/permissions.js';
import { type ApprovalControl, createApprovalControl } from '../../src/control/index.js';
import {
  APPROVER_ROLES,
  type Database,
  type EnvelopeInput,
  EVERY_ACCOUNT,
  openConsoleStore,
  openDatabase,
  ROLES,
} from '../../src/db/index.js';
import { lockKeyOfIntent } from '../../src/db/repositories/intent.js';
import {
  type EngineContext,
  inAccount,
  Maintenance,
  recordStrategiesSeen,
  resolveStrategyVersions,
  runCycle,
} from '../../src/engine/index.js';
import {
  type DcaStrategy,
  DEFAULT_ACCOUNT,
  parseStrategyText,
  type Strategy,
  strategyHash,
} from '../../src/strategy/index.js';
import {
  d,
  type EngineBench,
  freshSlot,
  replicaOn,
  startEngineBench,
  strategy,
} from '../engine/support/harness.js';
import { createTestDatabase, type TestDatabase, testBackends } from '../support/database.js';

/**
 * Four-eyes control against the sandbox over HTTP and a real database: an order that needs approval either
 * fits an active envelope (placed within the same quote, charged atomically with its intent) or parks with
 * the quote it saw; people approve (two distinct ones), reject, or let it expire; an approved cycle is run
 * by the maintenance pass on a fresh quote, within the approved maximum price.
 */
describe.each(testBackends())('approvals and envelopes on %s', (backend) => {
  let bench: EngineBench;
  let control: ApprovalControl;
  let nameCount = 0;

  let test: TestDatabase;

  beforeAll(async () => {
    // Every message to one channel, so the outbox rows written with each fact can be read back.
    test = await createTestDatabase(backend, { routeNotifications: () => ['desk'] });
    bench = await startEngineBench({ replicaId: 'replica-a', test });
    control = createApprovalControl(bench.database);
    await addPeople(bench.database, APPROVERS);
  });
  afterAll(async () => {
    await bench.close();
    await test.drop();
  });

  /** The outbox messages of one parked cycle, oldest first. */
  async function messagesOf(cycleId: number) {
    const recent = await bench.database.notifications.listRecent(500);
    return recent.filter((message) => message.subject === `cycle:${cycleId}`).reverse();
  }

  /** A strategy of its own per test, every order needing two people (or an envelope). */
  function guarded(overrides: Partial<DcaStrategy> = {}): DcaStrategy {
    nameCount += 1;
    return strategy({
      name: `approval-${nameCount}`,
      approval: approvalBy(2),
      ...overrides,
    });
  }

  const quoteRequests = () => bench.requests.filter((request) => request.operation === 'getQuote').length;

  async function activeEnvelope(subject: Strategy, limits: { maxOrder: string; maxTotal: string }) {
    const envelope = await proposeEnvelope(bench, control, subject, 'carla', {
      maxOrder: d(limits.maxOrder),
      maxTotal: d(limits.maxTotal),
    });
    await control.approveEnvelope(envelope.id, 'ana');
    return control.approveEnvelope(envelope.id, 'bruno');
  }

  function resumeWith(...strategies: Strategy[]) {
    return new Maintenance(bench.context, { strategies: () => strategies }).runOnce();
  }

  it('places a cycle that fits an active envelope within the same quote, charged to the envelope', async () => {
    const subject = guarded();
    const envelope = await activeEnvelope(subject, { maxOrder: '150.00', maxTotal: '1000.00' });
    expect(envelope.activeAt).not.toBeNull();
    const quotesBefore = quoteRequests();
    const report = await bench.run(subject, freshSlot());
    expect(report).toMatchObject({ outcome: 'placed', reason: 'ok' });
    expect(quoteRequests() - quotesBefore).toBe(1);
    const cycle = (await bench.database.cycles.listRecent(EVERY_ACCOUNT, { strategy: subject.name }))[0]!;
    expect(cycle.envelopeId).toBe(envelope.id);
    const [listed] = (await control.listEnvelopes(EVERY_ACCOUNT)).filter((e) => e.id === envelope.id);
    expect(listed?.spent.toString()).toBe(cycle.totalCost!.toString());
    expect(listed?.room.toString()).toBe(d('1000.00').minus(cycle.totalCost!).toString());
  });

  it('counts neither the creator nor the same person twice towards an envelope', async () => {
    const subject = guarded();
    const envelope = await proposeEnvelope(bench, control, subject, 'carla');
    await expect(control.approveEnvelope(envelope.id, 'carla')).rejects.toMatchObject({
      code: 'APPROVER_IS_REQUESTER',
    });
    await control.approveEnvelope(envelope.id, 'ana');
    await expect(control.approveEnvelope(envelope.id, 'ana')).rejects.toMatchObject({
      code: 'ALREADY_APPROVED_BY_PERSON',
    });
    // One approval of two: not active, so the cycle parks.
    const report = await bench.run(subject, freshSlot());
    expect(report.outcome).toBe('awaiting-approval');
    const revoked = await control.revokeEnvelope(envelope.id, 'ana');
    expect(revoked.revokedAt).not.toBeNull();
    await expect(control.approveEnvelope(envelope.id, 'bruno')).rejects.toMatchObject({
      code: 'ENVELOPE_REVOKED',
    });
    const audit = await openConsoleStore(bench.database).audit.list({ limit: 20 });
    const actions = audit.filter((row) => row.subject === `envelope:${envelope.id}`).map((row) => row.action);
    expect(actions.reverse()).toEqual(['envelope.add', 'envelope.approve', 'envelope.revoke']);
  });

  it('parks a cycle outside every envelope; two distinct people approve; it is placed at a fresh quote', async () => {
    const subject = guarded();
    await activeEnvelope(subject, { maxOrder: '50.00', maxTotal: '1000.00' });
    const report = await bench.run(subject, freshSlot());
    expect(report).toMatchObject({
      outcome: 'awaiting-approval',
      reason: 'approval_required',
      orderId: null,
    });
    const parkedQuoteId = report.quoteId;
    expect(parkedQuoteId).toMatch(/^[A-Za-z0-9]{8,9}$/);
    expect(bench.sandbox.ledger().some((order) => order.quoteId === parkedQuoteId)).toBe(false);

    const [parked] = (await control.listParked(EVERY_ACCOUNT)).filter(
      (p) => p.cycle.strategy === subject.name,
    );
    expect(parked).toMatchObject({ approversRequired: 2, approvedBy: [] });
    const cycleId = parked!.cycle.id;
    const trace = parked!.cycle.trace as { rule: string; reason?: string }[];
    expect(trace.at(-1)).toMatchObject({ rule: 'approval', reason: 'approval_required' });

    const first = await control.approve(cycleId, 'ana');
    expect(first).toMatchObject({ approvedBy: ['ana'], approvedMaxPrice: null });
    expect(first.cycle.state).toBe('awaiting_approval');
    await expect(control.approve(cycleId, 'ana')).rejects.toMatchObject({
      code: 'ALREADY_APPROVED_BY_PERSON',
    });
    const second = await control.approve(cycleId, 'bruno');
    expect(second.cycle.state).toBe('approved');
    expect(second.approvedMaxPrice?.toString()).toBe(parked!.defaultMaxPrice.toString());

    const pass = await resumeWith(subject);
    expect(pass.approvals?.resumed).toHaveLength(1);
    const resumed = pass.approvals!.resumed[0]!;
    expect(resumed).toMatchObject({ outcome: 'placed', reason: 'ok' });
    expect(resumed.quoteId).not.toBe(parkedQuoteId);
    expect(bench.sandbox.ledger().filter((order) => order.quoteId === resumed.quoteId)).toHaveLength(1);
    // Claimed once: a second pass finds nothing to run.
    expect((await resumeWith(subject)).approvals?.resumed).toEqual([]);

    const audit = await openConsoleStore(bench.database).audit.list({ limit: 20 });
    const rows = audit.filter((row) => row.subject === `cycle:${cycleId}`).reverse();
    expect(rows.map((row) => [row.actor, row.action])).toEqual([
      ['ana', 'approval.approve'],
      ['bruno', 'approval.approve'],
    ]);
    const messages = await messagesOf(cycleId);
    expect(messages.map((message) => message.type)).toEqual(['approval_needed', 'approval_decided']);
    expect(messages[0]!.data).toMatchObject({ approversRequired: 2, quoteId: parkedQuoteId });
    expect(messages[1]!.data).toMatchObject({ decision: 'approved', by: ['ana', 'bruno'] });
  });

  it('rejects a parked cycle with the reason: it ends without an order', async () => {
    const subject = guarded();
    const report = await bench.run(subject, freshSlot());
    const cycleId = (await bench.database.cycles.getBySlot(subject.name, new Date(report.slot)))!.id;
    await control.approve(cycleId, 'ana');
    await expect(control.reject(cycleId, 'bruno', '  ')).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
    const rejected = await control.reject(cycleId, 'bruno', 'not this week');
    expect(rejected).toMatchObject({ state: 'rejected', reasonCode: 'approval_rejected' });
    await expect(control.approve(cycleId, 'carla')).rejects.toMatchObject({
      code: 'CYCLE_NOT_AWAITING_APPROVAL',
    });
    expect((await resumeWith(subject)).approvals?.resumed).toEqual([]);
    const [row] = await openConsoleStore(bench.database).audit.list({ limit: 1 });
    expect(row).toMatchObject({
      actor: 'bruno',
      action: 'approval.reject',
      after: { reason: 'not this week' },
    });
    const decided = (await messagesOf(cycleId)).at(-1);
    expect(decided).toMatchObject({
      type: 'approval_decided',
      data: { decision: 'rejected', decisionReason: 'not this week' },
    });
  });

  it('expires a parked cycle past its timeout in the maintenance pass', async () => {
    const subject = guarded({
      approval: approvalBy(1, 60_000),
    });
    const report = await bench.run(subject, freshSlot());
    const cycleId = (await bench.database.cycles.getBySlot(subject.name, new Date(report.slot)))!.id;
    expect((await resumeWith(subject)).approvals?.expired).toBe(0);
    await endApprovalWindow(bench.database, cycleId);
    expect((await new Maintenance(bench.context).runOnce()).approvals?.expired).toBeGreaterThanOrEqual(1);
    expect(await bench.database.cycles.get(cycleId)).toMatchObject({
      state: 'approval_expired',
      reasonCode: 'approval_expired',
    });
  });

  it('expires an approved cycle that no replica running its strategy claimed before the deadline', async () => {
    const subject = guarded({
      approval: approvalBy(1, 60_000),
    });
    const report = await bench.run(subject, freshSlot());
    const cycleId = (await bench.database.cycles.getBySlot(subject.name, new Date(report.slot)))!.id;
    expect((await control.approve(cycleId, 'ana')).cycle.state).toBe('approved');
    // This pass runs no strategy, so nothing claims it; its reservation ends at the deadline all the same.
    await endApprovalWindow(bench.database, cycleId);
    const later = new Date(Date.now() + 61_000);
    expect((await new Maintenance(bench.context).runOnce()).approvals?.expired).toBeGreaterThanOrEqual(1);
    expect(await bench.database.cycles.get(cycleId)).toMatchObject({ state: 'approval_expired' });
    expect(
      (
        await bench.database.cycles.spendFigures({
          strategy: subject.name,
          account: DEFAULT_ACCOUNT,
          periods: { day: { start: new Date(0), end: later }, month: { start: new Date(0), end: later } },
        })
      ).reserved.toString(),
    ).toBe('0');
  });

  it('skips an approved cycle whose fresh quote is above the approved maximum price, with the reason', async () => {
    const subject = guarded({
      approval: approvalBy(1),
    });
    const report = await bench.run(subject, freshSlot());
    const cycleId = (await bench.database.cycles.getBySlot(subject.name, new Date(report.slot)))!.id;
    // The sandbox quotes around 5.40: no fresh quote is at or below 1.0000.
    const approved = await control.approve(cycleId, 'ana', { maxPrice: d('1.0000') });
    expect(approved.approvedMaxPrice?.toString()).toBe('1');
    const [resumed] = (await resumeWith(subject)).approvals!.resumed;
    expect(resumed).toMatchObject({ outcome: 'skipped', reason: 'price_above_approved_max' });
    const cycle = await bench.database.cycles.get(cycleId);
    const trace = cycle!.trace as { rule: string; passed: boolean; detail: Record<string, string> }[];
    expect(trace.find((rule) => rule.rule === 'approved_max_price')).toMatchObject({
      passed: false,
      detail: { approvedMaxPrice: '1' },
    });
  });

  /** The strategy as a file holding `amount` would run it, recorded as a version (changes apply at once). */
  async function versioned(name: string, amount: string): Promise<Strategy> {
    const text = `name: ${name}
kind: dca
symbol: USDTBRL
amount: "${amount}"
schedule: "* * * * * *"
approval: { required: always, approvers: 2, timeout: 1h, priceTolerancePct: "0.5" }
`;
    const parsed = parseStrategyText(text, `${name}.yaml`);
    expect(parsed.problems).toEqual([]);
    const strategies = parsed.strategies.map((entry) => entry.strategy);
    const loaded = { valid: true as const, files: [], strategies, texts: new Map([[name, text]]) };
    const { running } = await resolveStrategyVersions(bench.context, loaded, {
      changes: 'apply',
      actor: 'automation',
    });
    expect(strategyHash(running[0]!)).toBe(strategyHash(strategies[0]!));
    await recordStrategiesSeen(bench.context, running);
    return running[0]!;
  }

  it('buys the parked version’s amount when the strategy changed after the approval', async () => {
    nameCount += 1;
    const name = `approval-${nameCount}`;
    const first = await versioned(name, '100.00');
    const report = await bench.run(first, freshSlot());
    expect(report.outcome).toBe('awaiting-approval');
    const cycleId = (await bench.database.cycles.getBySlot(name, new Date(report.slot)))!.id;
    await control.approve(cycleId, 'ana');
    await control.approve(cycleId, 'bruno');
    // The file now says 10,000 and applies at once: the approval was for 100.00 under version 1.
    const second = await versioned(name, '10000.00');
    expect(second.version).toBe(2);
    const [resumed] = (await resumeWith(second)).approvals!.resumed;
    expect(resumed).toMatchObject({ outcome: 'placed', amount: '100' });
    const order = bench.sandbox.ledger().find((candidate) => candidate.quoteId === resumed!.quoteId);
    expect(order?.amount).toBe('100');
    expect(await bench.database.cycles.get(cycleId)).toMatchObject({ strategyVersion: 1 });
  });

  it('ends an approved cycle whose parked version cannot be run again, with the reason, and says so', async () => {
    const subject = guarded();
    const report = await bench.run(subject, freshSlot());
    const cycleId = (await bench.database.cycles.getBySlot(subject.name, new Date(report.slot)))!.id;
    await control.approve(cycleId, 'ana');
    await control.approve(cycleId, 'bruno');
    // No stored version to rebuild (the cycle ran before versions), and the strategy now buys 10,000.
    const quotesBefore = quoteRequests();
    const [resumed] = (await resumeWith({ ...subject, amount: d('10000.00') })).approvals!.resumed;
    expect(resumed).toMatchObject({ outcome: 'failed', reason: 'approved_version_gone', orderId: null });
    expect(quoteRequests()).toBe(quotesBefore);
    expect(await bench.database.cycles.get(cycleId)).toMatchObject({
      state: 'failed',
      reasonCode: 'approved_version_gone',
    });
    const failed = (await bench.database.notifications.listRecent(500)).find(
      (message) => message.type === 'order_failed' && message.data.cycleId === cycleId,
    );
    expect(failed?.data).toMatchObject({ reason: 'approved_version_gone' });
  });

  it('caps the price at the lowest limit of every approver, a blank one being the default', async () => {
    const subject = guarded();
    const report = await bench.run(subject, freshSlot());
    const cycleId = (await bench.database.cycles.getBySlot(subject.name, new Date(report.slot)))!.id;
    const [parked] = (await control.listParked(EVERY_ACCOUNT)).filter((p) => p.cycle.id === cycleId);
    // ana agreed to the default; bruno to anything up to 9.0000: the cap is what both agreed to.
    await control.approve(cycleId, 'ana');
    const second = await control.approve(cycleId, 'bruno', { maxPrice: d('9.0000') });
    expect(second.approvedMaxPrice?.toString()).toBe(parked!.defaultMaxPrice.toString());
    // A named limit below the default is the cap.
    const other = guarded();
    const otherReport = await bench.run(other, freshSlot());
    const otherId = (await bench.database.cycles.getBySlot(other.name, new Date(otherReport.slot)))!.id;
    await control.approve(otherId, 'ana', { maxPrice: d('1.2345') });
    expect((await control.approve(otherId, 'bruno')).approvedMaxPrice?.toString()).toBe('1.2345');
  });

  it('counts one person once whatever the case of the name', async () => {
    const subject = guarded();
    const report = await bench.run(subject, freshSlot());
    const cycleId = (await bench.database.cycles.getBySlot(subject.name, new Date(report.slot)))!.id;
    expect((await control.approve(cycleId, 'ana')).approvedBy).toEqual(['ana']);
    await expect(control.approve(cycleId, 'Ana')).rejects.toMatchObject({
      code: 'ALREADY_APPROVED_BY_PERSON',
    });
    expect((await bench.database.cycles.get(cycleId))?.state).toBe('awaiting_approval');
    const envelope = await proposeEnvelope(bench, control, subject, 'Carla');
    expect(envelope.createdBy).toBe('carla');
    await expect(control.approveEnvelope(envelope.id, 'CARLA')).rejects.toMatchObject({
      code: 'APPROVER_IS_REQUESTER',
    });
  });

  it('lets only enabled people with the approve permission decide', async () => {
    const subject = guarded();
    const report = await bench.run(subject, freshSlot());
    const cycleId = (await bench.database.cycles.getBySlot(subject.name, new Date(report.slot)))!.id;
    await expect(control.approve(cycleId, 'nobody')).rejects.toMatchObject({ code: 'PERSON_UNKNOWN' });
    await expect(control.approve(cycleId, 'victor')).rejects.toMatchObject({ code: 'PERSON_CANNOT_APPROVE' });
    await expect(control.approve(cycleId, 'olga')).rejects.toMatchObject({ code: 'PERSON_CANNOT_APPROVE' });
    await expect(control.reject(cycleId, 'victor', 'no')).rejects.toMatchObject({
      code: 'PERSON_CANNOT_APPROVE',
    });
    await expect(control.approve(cycleId, 'dora')).rejects.toMatchObject({ code: 'PERSON_DISABLED' });
    await expect(control.approve(cycleId, 'automation')).rejects.toMatchObject({ code: 'PERSON_UNKNOWN' });
    expect(await bench.database.approvals.forCycle(cycleId)).toMatchObject({ approvals: [], decision: null });
  });

  it('stops counting the approvals of a person disabled before the purchase', async () => {
    const people = openConsoleStore(bench.database).people;
    await addPeople(bench.database, ['gil', 'hana', 'ivo', 'joao']);
    // A cycle two people approved, not yet bought: disabling one puts it back in the queue.
    const subject = guarded();
    const report = await bench.run(subject, freshSlot());
    const cycleId = (await bench.database.cycles.getBySlot(subject.name, new Date(report.slot)))!.id;
    await control.approve(cycleId, 'gil');
    expect((await control.approve(cycleId, 'hana')).cycle.state).toBe('approved');
    await people.disable('hana', 'admin');
    expect(await bench.database.cycles.get(cycleId)).toMatchObject({ state: 'awaiting_approval' });
    expect((await resumeWith(subject)).approvals?.resumed).toEqual([]);
    expect((await control.approve(cycleId, 'ivo')).cycle.state).toBe('approved');
    expect((await resumeWith(subject)).approvals?.resumed[0]).toMatchObject({ outcome: 'placed' });

    // An envelope two people approved: disabling one makes it cover nothing until another approves.
    const covered = guarded();
    const envelope = await proposeEnvelope(bench, control, covered, 'gil');
    await control.approveEnvelope(envelope.id, 'ivo');
    expect((await control.approveEnvelope(envelope.id, 'joao')).activeAt).not.toBeNull();
    await people.disable('joao', 'admin');
    expect((await bench.run(covered, freshSlot())).outcome).toBe('awaiting-approval');
  });

  it('holds an envelope to the strategy’s approver count now when it was raised after the envelope', async () => {
    const one = guarded({
      approval: approvalBy(1),
    });
    const envelope = await proposeEnvelope(bench, control, one, 'carla');
    expect(envelope.approversRequired).toBe(1);
    expect((await control.approveEnvelope(envelope.id, 'ana')).activeAt).not.toBeNull();
    // The strategy now wants two people: the envelope one approved covers nothing until a second approves it.
    const two = { ...one, approval: { ...one.approval!, approvers: 2 } };
    expect((await bench.run(two, freshSlot())).outcome).toBe('awaiting-approval');
    await control.approveEnvelope(envelope.id, 'bruno');
    expect(await bench.run(two, freshSlot())).toMatchObject({ outcome: 'placed' });
  });

  /** An envelope of `subject` approved by two people, with `overrides` of its limits and window. */
  async function envelopeWith(subject: Strategy, overrides: Partial<EnvelopeInput>) {
    const envelope = await proposeEnvelope(bench, control, subject, 'carla', overrides);
    await control.approveEnvelope(envelope.id, 'ana');
    const active = await control.approveEnvelope(envelope.id, 'bruno');
    expect(active.activeAt).not.toBeNull();
    return active;
  }

  // Each guard of the envelope charge, alone: the same envelope without that one limit covers the order.
  it('charges no envelope whose maximum price is below the quote', async () => {
    const subject = guarded();
    // The sandbox quotes about 5.40.
    await envelopeWith(subject, { maxPrice: d('5.0000') });
    expect((await bench.run(subject, freshSlot())).outcome).toBe('awaiting-approval');
    await envelopeWith(subject, { maxPrice: d('9.0000') });
    expect((await bench.run(subject, freshSlot())).outcome).toBe('placed');
  });

  it('charges no envelope before its window opens or after it closes', async () => {
    const subject = guarded();
    const hour = 3_600_000;
    await envelopeWith(subject, {
      validFrom: new Date(Date.now() + hour),
      validUntil: new Date(Date.now() + 2 * hour),
    });
    await envelopeWith(subject, {
      validFrom: new Date(Date.now() - 2 * hour),
      validUntil: new Date(Date.now() - hour),
    });
    expect((await bench.run(subject, freshSlot())).outcome).toBe('awaiting-approval');
  });

  it('charges no revoked envelope', async () => {
    const subject = guarded();
    const envelope = await envelopeWith(subject, {});
    await control.revokeEnvelope(envelope.id, 'ana');
    expect((await bench.run(subject, freshSlot())).outcome).toBe('awaiting-approval');
  });

  it('counts a parked cycle against the budget until it ends', async () => {
    const subject = guarded({ budget: { perDay: d('150.00') } });
    expect((await bench.run(subject, freshSlot())).outcome).toBe('awaiting-approval');
    expect(await bench.run(subject, freshSlot())).toMatchObject({
      outcome: 'skipped',
      reason: 'budget_day_exceeded',
    });
  });
});

describe('who may approve', () => {
  it('is every role the console grants the approve permission, and no other', () => {
    for (const role of ROLES) expect(APPROVER_ROLES.includes(role), role).toBe(allows(role, 'approve'));
  });
});

/** A strategy's approval settings: every order needs `approvers` people, who have `timeoutMs` to decide. */
function approvalBy(approvers: number, timeoutMs = 3_600_000) {
  return { required: 'always' as const, approvers, timeoutMs, priceTolerancePct: d('0.5') };
}

/**
 * An envelope for `subject` (recorded as seen first, as a worker would have) proposed by `by`: orders up to
 * 150.00, 1000.00 in all, no price limit, open from a minute ago for an hour, unless `overrides` say otherwise.
 */
async function proposeEnvelope(
  bench: EngineBench,
  control: ApprovalControl,
  subject: Strategy,
  by: string,
  overrides: Partial<EnvelopeInput> = {},
) {
  await recordStrategiesSeen(bench.context, [subject]);
  return control.addEnvelope(
    {
      strategy: subject.name,
      maxOrder: d('150.00'),
      maxTotal: d('1000.00'),
      maxPrice: null,
      validFrom: new Date(Date.now() - 60_000),
      validUntil: new Date(Date.now() + 3_600_000),
      ...overrides,
    },
    by,
  );
}

/** Runs a cycle of `subject` that parks for approval, and returns it as the queue lists it. */
async function parkOne(bench: EngineBench, control: ApprovalControl, subject: Strategy) {
  await recordStrategiesSeen(bench.context, [subject]);
  const parked = await runCycle(bench.inAccount(), {
    strategy: subject,
    slot: freshSlot(),
    trigger: 'schedule',
  });
  expect(parked.outcome).toBe('awaiting-approval');
  const [waiting] = (await control.listParked(EVERY_ACCOUNT)).filter(
    (p) => p.cycle.strategy === subject.name,
  );
  expect(waiting).toBeDefined();
  return waiting!;
}

/** Ends the cycle's approval window one second ago by the database's clock, which decides deadlines. */
async function endApprovalWindow(database: Database, cycleId: number) {
  await database.withReservedConnection((connection) =>
    connection.query(
      `update approval_requests set expires_at = now() - interval '1 second' where cycle_id = ${cycleId}`,
    ),
  );
}

/** The people of the tests who approve; a viewer, an operator and a disabled approver who may not. */
const APPROVERS = ['ana', 'bruno', 'carla'];

async function addPeople(database: Database, approvers: readonly string[]) {
  const { people } = openConsoleStore(database);
  for (const name of approvers) await people.add({ name, role: 'approver', passwordHash: 'unused' }, 'test');
  if (approvers !== APPROVERS) return;
  await people.add({ name: 'victor', role: 'viewer', passwordHash: 'unused' }, 'test');
  await people.add({ name: 'olga', role: 'operator', passwordHash: 'unused' }, 'test');
  await people.add({ name: 'dora', role: 'approver', passwordHash: 'unused' }, 'test');
  await people.disable('dora', 'test');
}

/**
 * Two replicas (on PostgreSQL each with its own pool) race for the last room in an envelope: the room fits
 * one order, both quote before either commits (the sandbox holds every quote 20 ms), and the envelope is
 * charged under the intent's locks, so exactly one places and the other parks.
 */
describe('two replicas racing for the last room in an envelope', () => {
  let bench: EngineBench;
  let second: Database;
  let replicaB: EngineContext;

  beforeAll(async () => {
    bench = await startEngineBench({
      replicaId: 'replica-a',
      sandbox: { faults: { quote: { latencyMs: 20 } } },
    });
    second = bench.test.url ? await openDatabase({ url: bench.test.url, maxConnections: 5 }) : bench.database;
    await addPeople(bench.database, APPROVERS);
    replicaB = replicaOn(bench, second);
  });
  afterAll(async () => {
    if (second !== bench.database) await second.close();
    await bench.close();
  });

  it('places exactly one order in each of 5 rounds', async () => {
    const control = createApprovalControl(bench.database);
    for (let round = 0; round < 5; round++) {
      const subject = strategy({
        name: `envelope-race-${round}`,
        approval: approvalBy(1),
      });
      // Room for one order of about 100.00, not two.
      const envelope = await proposeEnvelope(bench, control, subject, 'carla', { maxTotal: d('150.00') });
      await control.approveEnvelope(envelope.id, 'ana');
      const slot = freshSlot();
      const reports = await Promise.all([
        runCycle(bench.inAccount(), { strategy: subject, slot, trigger: 'schedule' }),
        runCycle(inAccount(replicaB, DEFAULT_ACCOUNT), {
          strategy: subject,
          slot: new Date(slot.getTime() + 500),
          trigger: 'schedule',
        }),
      ]);
      const outcomes = reports.map((report) => report.outcome).sort();
      expect(outcomes, `round ${round}`).toEqual(['awaiting-approval', 'placed']);
      const quoteIds = new Set(reports.map((report) => report.quoteId));
      expect(bench.sandbox.ledger().filter((order) => quoteIds.has(order.quoteId))).toHaveLength(1);
      const [listed] = (await control.listEnvelopes(EVERY_ACCOUNT)).filter((e) => e.id === envelope.id);
      expect(listed!.spent.lessThanOrEqualTo(listed!.maxTotal)).toBe(true);
    }
  });

  it('buys an approved cycle within 2 s of the last approval, once, whichever replica claims it', async () => {
    const control = createApprovalControl(bench.database);
    const subject = strategy({
      name: 'approved-at-once',
      approval: approvalBy(1),
    });
    const waiting = await parkOne(bench, control, subject);
    // Both replicas running, their maintenance passes 30 s apart (the default): only the approval wakes them.
    const replicas = [bench.context, replicaB].map(
      (context) => new Maintenance(context, { strategies: () => [subject] }),
    );
    for (const replica of replicas) replica.start();
    try {
      // The first pass at start is over (runOnce joins it): the next one is 30 s away.
      await Promise.all(replicas.map((replica) => replica.runOnce()));
      const ordered = new Promise<number>((resolve) => {
        bench.onRequest = (event) => {
          if (event.operation === 'createOrder' && event.status !== undefined) resolve(performance.now());
        };
      });
      const approvedAt = performance.now();
      await control.approve(waiting.cycle.id, 'ana');
      const orderedAt = await Promise.race([
        ordered,
        new Promise<number>((resolve) => setTimeout(resolve, 5_000, Number.NaN)),
      ]);
      expect(orderedAt - approvedAt, 'milliseconds from the approval to the order').toBeLessThan(2_000);
    } finally {
      bench.onRequest = undefined;
      await Promise.all(replicas.map((replica) => replica.stop()));
    }
    const cycle = await bench.database.cycles.get(waiting.cycle.id);
    expect(cycle?.state).toBe('placed');
    expect(bench.sandbox.ledger().filter((order) => order.quoteId === cycle!.quoteId)).toHaveLength(1);
  });

  it('runs an approved cycle exactly once when both replicas look for it at the same moment', async () => {
    const control = createApprovalControl(bench.database);
    const subject = strategy({
      name: 'approved-race',
      approval: approvalBy(1),
    });
    const waiting = await parkOne(bench, control, subject);
    await control.approve(waiting.cycle.id, 'ana');
    const passes = await Promise.all(
      [bench.context, replicaB].map((context) =>
        new Maintenance(context, { strategies: () => [subject] }).runOnce(),
      ),
    );
    const resumed = passes.flatMap((pass) => pass.approvals?.resumed ?? []);
    expect(resumed).toHaveLength(1);
    expect(resumed[0]).toMatchObject({ outcome: 'placed' });
    expect(bench.sandbox.ledger().filter((order) => order.quoteId === resumed[0]!.quoteId)).toHaveLength(1);
  });
});

/**
 * A revoke and a charge of the same envelope at once: the one interleaving only the envelope's row lock
 * (`FOR UPDATE OF envelopes` in the intent commit) orders. Two charges of one envelope never need it, since an
 * envelope belongs to one strategy and every charge of it already waits for that strategy's intent lock; a
 * revoke takes no strategy lock. Each interleaving is forced, not hoped for: one side is held inside its
 * transaction by a lock from a connection of the test, taken at a point after the envelope's row is read, and
 * pg_stat_activity (pg_blocking_pids) tells when the other side is waiting. This needs a second connection
 * while the first waits, so PostgreSQL only: PGlite has one connection, where one side would wait for the
 * other forever.
 */
describe.skipIf(inject('treasuryDatabase').backend !== 'postgres')(
  'a revoke while an envelope is charged',
  () => {
    let test: TestDatabase;
    let bench: EngineBench;
    let admin: postgres.Sql;
    let control: ApprovalControl;
    let count = 0;

    beforeAll(async () => {
      test = await createTestDatabase('postgres');
      bench = await startEngineBench({ replicaId: 'replica-a', test });
      admin = postgres(test.url!, { max: 3, onnotice: () => {} });
      control = createApprovalControl(bench.database);
      await addPeople(bench.database, APPROVERS);
    });
    afterAll(async () => {
      await admin.end({ timeout: 1 });
      await bench.close();
      await test.drop();
    });

    /** A strategy needing one approver per order, and an active envelope with room for many of its orders. */
    async function envelopeOf(): Promise<{ subject: Strategy; envelopeId: number }> {
      const subject = strategy({
        name: `revoke-race-${++count}`,
        approval: approvalBy(1),
      });
      const envelope = await proposeEnvelope(bench, control, subject, 'carla');
      await control.approveEnvelope(envelope.id, 'ana');
      return { subject, envelopeId: envelope.id };
    }

    /** The backends waiting for a lock that `holder` holds. */
    async function waitingOn(holder: number): Promise<number[]> {
      const rows = await admin`select pid from pg_stat_activity
        where datname = current_database() and ${holder}::int = any(pg_blocking_pids(pid))`;
      return rows.map((row) => Number(row.pid));
    }

    /** The backend waiting on a lock `holder` holds, once there is one. */
    function waiterOn(holder: number): Promise<number> {
      return vi.waitFor(
        async () => {
          const [pid] = await waitingOn(holder);
          expect(pid).toBeDefined();
          return pid!;
        },
        { timeout: 5_000, interval: 10 },
      );
    }

    /** Until `settled()` or a backend waits on `holder`; which of the two says whether the lock was taken. */
    async function settledOrWaitingOn(holder: number, settled: () => boolean): Promise<void> {
      await vi.waitFor(
        async () => {
          if (!settled()) expect(await waitingOn(holder)).not.toEqual([]);
        },
        { timeout: 5_000, interval: 10 },
      );
    }

    async function backendOf(connection: postgres.ReservedSql): Promise<number> {
      const [row] = await connection`select pg_backend_pid() as pid`;
      return Number(row!.pid);
    }

    async function spentInRevokeAudit(envelopeId: number): Promise<string> {
      const audit = await openConsoleStore(bench.database).audit.list({ limit: 50 });
      const row = audit.find(
        (entry) => entry.action === 'envelope.revoke' && entry.subject === `envelope:${envelopeId}`,
      );
      return String((row?.after as { spent?: unknown } | undefined)?.spent);
    }

    it('a charge inside its intent first: the revoke waits for it and sees the spend', async () => {
      const { subject, envelopeId } = await envelopeOf();
      const gate = await admin.reserve();
      const rowLock = await admin.reserve();
      try {
        // The charge is held at the start of its intent transaction (its strategy's lock), after every earlier
        // step of the cycle, so that the cycle's row can be locked without blocking one of them.
        await gate`begin`;
        await gate`select pg_advisory_xact_lock(${lockKeyOfIntent(subject.name)}::bigint)`;
        const gatePid = await backendOf(gate);
        const charging = bench.run(subject, freshSlot());
        const chargePid = await waiterOn(gatePid);
        // The cycle's row locked: the intent reads its figures and the envelope, then waits to write the cycle.
        await rowLock`begin`;
        await rowLock`select id from cycles where strategy = ${subject.name} for update`;
        const rowLockPid = await backendOf(rowLock);
        await gate`commit`;
        expect(await waiterOn(rowLockPid)).toBe(chargePid);
        let revokeSettled = false;
        const revoking = control.revokeEnvelope(envelopeId, 'bruno').finally(() => {
          revokeSettled = true;
        });
        // The revoke waits for the charge's transaction (the envelope row it locked), or, without the lock,
        // revokes under the charge's feet.
        await settledOrWaitingOn(chargePid, () => revokeSettled);
        await rowLock`commit`;
        const [report, revoked] = await Promise.all([charging, revoking]);

        expect(report).toMatchObject({ outcome: 'placed' });
        const cycle = await bench.database.cycles.getBySlot(subject.name, new Date(report.slot));
        expect(cycle?.envelopeId).toBe(envelopeId);
        // The charge came before the revoke: what the revoke recorded includes it.
        expect(revoked.spent.toString(), 'spend the revoke saw').toBe(cycle!.totalCost!.toString());
        expect(await spentInRevokeAudit(envelopeId)).toBe(cycle!.totalCost!.toString());
      } finally {
        gate.release();
        rowLock.release();
      }
    });

    it('a revoke inside its transaction first: the charge waits for it, sees the revocation and parks', async () => {
      const { subject, envelopeId } = await envelopeOf();
      const auditLock = await admin.reserve();
      try {
        // The revoke is held after it locked and updated the envelope, at its audit row (nothing of a cycle
        // writes the audit log).
        await auditLock`begin`;
        await auditLock`lock table audit_log in share mode`;
        const auditPid = await backendOf(auditLock);
        const revoking = control.revokeEnvelope(envelopeId, 'bruno');
        const revokePid = await waiterOn(auditPid);
        let chargeSettled = false;
        const charging = bench.run(subject, freshSlot()).finally(() => {
          chargeSettled = true;
        });
        // The charge waits for the revoke's transaction (the envelope row it locked), or, without the lock,
        // charges the envelope being revoked.
        await settledOrWaitingOn(revokePid, () => chargeSettled);
        await auditLock`commit`;
        const [revoked, report] = await Promise.all([revoking, charging]);

        expect(revoked.spent.toString()).toBe('0');
        expect(report.outcome, 'the charge after the revoke').toBe('awaiting-approval');
        const cycle = await bench.database.cycles.getBySlot(subject.name, new Date(report.slot));
        expect(cycle?.envelopeId).toBeNull();
        expect(bench.sandbox.ledger().filter((order) => order.quoteId === report.quoteId)).toHaveLength(0);
      } finally {
        auditLock.release();
      }
    });
  },
);

/**
 * A replica whose clock is 60 s behind the database's: deadlines and envelope windows are judged by the
 * database's clock, so it neither accepts an approval, nor buys an approved cycle, nor charges an envelope
 * past its time.
 */
describe.each(testBackends())('a replica 60 s behind the database on %s', (backend) => {
  let bench: EngineBench;
  let control: ApprovalControl;
  let test: TestDatabase;
  let count = 0;
  const behind = () => new Date(Date.now() - 60_000);
  const subject = () =>
    strategy({
      name: `behind-${++count}`,
      approval: approvalBy(1),
    });
  const query = (text: string) =>
    bench.database.withReservedConnection((connection) => connection.query(text));
  const pastDeadline = (cycleId: number) => endApprovalWindow(bench.database, cycleId);

  beforeAll(async () => {
    test = await createTestDatabase(backend, { clock: behind });
    bench = await startEngineBench({ replicaId: 'replica-behind', test, clock: behind });
    control = createApprovalControl(bench.database);
    await addPeople(bench.database, APPROVERS);
  });
  afterAll(async () => {
    await bench.close();
    await test.drop();
  });

  async function parked(of: Strategy): Promise<number> {
    const report = await bench.run(of, freshSlot());
    expect(report.outcome).toBe('awaiting-approval');
    return (await bench.database.cycles.getBySlot(of.name, new Date(report.slot)))!.id;
  }

  it('refuses an approval past the deadline', async () => {
    const cycleId = await parked(subject());
    await pastDeadline(cycleId);
    await expect(control.approve(cycleId, 'ana')).rejects.toMatchObject({ code: 'APPROVAL_EXPIRED' });
  });

  it('never buys an approved cycle past its deadline', async () => {
    const of = subject();
    const cycleId = await parked(of);
    await control.approve(cycleId, 'ana');
    await pastDeadline(cycleId);
    const pass = await new Maintenance(bench.context, { strategies: () => [of] }).runOnce();
    expect(pass.approvals?.resumed).toEqual([]);
    expect(await bench.database.cycles.get(cycleId)).toMatchObject({ state: 'approval_expired' });
  });

  it('expires a parked cycle at the database’s deadline', async () => {
    const cycleId = await parked(subject());
    await pastDeadline(cycleId);
    expect((await new Maintenance(bench.context).runOnce()).approvals?.expired).toBeGreaterThanOrEqual(1);
    expect(await bench.database.cycles.get(cycleId)).toMatchObject({ state: 'approval_expired' });
  });

  it('parks with a deadline counted from the database’s clock', async () => {
    const cycleId = await parked(subject());
    const [row] = await query(
      `select extract(epoch from expires_at - now()) * 1000 as left_ms from approval_requests where cycle_id = ${cycleId}`,
    );
    expect(Number(row?.left_ms)).toBeGreaterThan(3_600_000 - 30_000);
  });

  it('charges no envelope past its window', async () => {
    const of = subject();
    // By the replica's clock the envelope still runs for 50 s; by the database's it ended 10 s ago.
    const envelope = await proposeEnvelope(bench, control, of, 'carla', {
      validFrom: new Date(Date.now() - 3_600_000),
      validUntil: new Date(Date.now() - 10_000),
    });
    await control.approveEnvelope(envelope.id, 'ana');
    expect((await bench.run(of, freshSlot())).outcome).toBe('awaiting-approval');
  });
});
