/**
 * What a person does about four-eyes control from the console: approve or reject a parked cycle, add,
 * approve or revoke an envelope. Each is the same operation of src/control the command line runs, with the
 * logged-in person as the acting person, so the domain's refusals (never one's own envelope, never the same
 * person twice, nothing decided twice) and its audit rows are the same from both. The forms are checked here
 * first, naming the field, so that a typo is a 400 and not a half-understood request, and the cycle, strategy
 * or envelope named is read through the person's account scope: another account's is not found (404). The
 * server registers these next to CONSOLE_ACTIONS, with the same session, permission and CSRF checks.
 */
import { createApprovalControl } from '../control/index.js';
import { type Decimal, MoneyFormatError, parseDecimal } from '../money.js';
import { requireVisible } from './accounts.js';
import { type ConsoleAction, visibleCycle, visibleStrategy } from './actions.js';
import { type ConsoleContext, ConsoleInputError, type ConsoleRequest, PageNotFound } from './context.js';

/** Longest text taken from a form field; the domain keeps at most 500 characters of a reason anyway. */
const FIELD_MAX = 1000;
/** ISO 8601: a date (UTC midnight) or a date-time with its zone, so that nobody's local time is guessed. */
const INSTANT = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2}))?$/;

const field = (body: Record<string, unknown>, name: string): string => {
  const value = body[name];
  return typeof value === 'string' ? value.trim().slice(0, FIELD_MAX) : '';
};

function idOf(what: 'cycle' | 'envelope', text: string | undefined): number {
  if (!text || !/^[1-9]\d{0,14}$/.test(text)) {
    throw new ConsoleInputError(`${what}: "${text ?? ''}" is not a ${what} id`);
  }
  return Number(text);
}

function decimalOf(name: string, text: string): Decimal {
  try {
    return parseDecimal(text, name);
  } catch (error) {
    if (error instanceof MoneyFormatError) throw new ConsoleInputError(error.message);
    throw error;
  }
}

function requiredDecimal(body: Record<string, unknown>, name: string): Decimal {
  const text = field(body, name);
  if (text === '') throw new ConsoleInputError(`${name}: required`);
  return decimalOf(name, text);
}

function optionalDecimal(body: Record<string, unknown>, name: string): Decimal | undefined {
  const text = field(body, name);
  return text === '' ? undefined : decimalOf(name, text);
}

function instantOf(body: Record<string, unknown>, name: string): Date {
  const text = field(body, name);
  const at = new Date(text);
  if (!INSTANT.test(text) || Number.isNaN(at.getTime())) {
    throw new ConsoleInputError(
      `${name}: expected an ISO 8601 date or date-time with its zone, like 2026-01-31T18:00:00Z (got ${JSON.stringify(text.slice(0, 40))})`,
    );
  }
  return at;
}

export const APPROVAL_ACTIONS: readonly ConsoleAction[] = [
  {
    path: '/cycles/:id/approve',
    permission: 'approve',
    async run(context, request, params, body) {
      const cycleId = idOf('cycle', params.id);
      const maxPrice = optionalDecimal(body, 'maxPrice');
      await visibleCycle(context, request, cycleId);
      await createApprovalControl(context.database).approve(
        cycleId,
        request.session.person.name,
        maxPrice === undefined ? {} : { maxPrice },
      );
    },
  },
  {
    path: '/cycles/:id/reject',
    permission: 'approve',
    async run(context, request, params, body) {
      const cycleId = idOf('cycle', params.id);
      const reason = field(body, 'reason');
      if (reason === '') throw new ConsoleInputError('reason: a rejection needs a reason');
      await visibleCycle(context, request, cycleId);
      await createApprovalControl(context.database).reject(cycleId, request.session.person.name, reason);
    },
  },
  {
    path: '/envelopes',
    permission: 'approve',
    async run(context, request, _params, body) {
      const strategy = field(body, 'strategy');
      if (strategy === '') throw new ConsoleInputError('strategy: required');
      const input = {
        strategy: (await visibleStrategy(context, request, strategy)).name,
        maxOrder: requiredDecimal(body, 'maxOrder'),
        maxTotal: requiredDecimal(body, 'maxTotal'),
        maxPrice: optionalDecimal(body, 'maxPrice') ?? null,
        validFrom: instantOf(body, 'from'),
        validUntil: instantOf(body, 'until'),
      };
      await createApprovalControl(context.database).addEnvelope(input, request.session.person.name);
    },
  },
  {
    path: '/envelopes/:id/approve',
    permission: 'approve',
    async run(context, request, params) {
      const id = await visibleEnvelope(context, request, params.id);
      await createApprovalControl(context.database).approveEnvelope(id, request.session.person.name);
    },
  },
  {
    path: '/envelopes/:id/revoke',
    permission: 'approve',
    async run(context, request, params) {
      const id = await visibleEnvelope(context, request, params.id);
      await createApprovalControl(context.database).revokeEnvelope(id, request.session.person.name);
    },
  },
];

/** The envelope's id, when the person sees the account of its strategy. */
async function visibleEnvelope(
  { store }: ConsoleContext,
  { scope }: ConsoleRequest,
  text: string | undefined,
): Promise<number> {
  const id = idOf('envelope', text);
  const account = await store.reads.accountOfEnvelope(id);
  if (account === null) throw new PageNotFound(`no envelope with id ${id}`);
  requireVisible(scope, account, `no envelope with id ${id}`);
  return id;
}
