/**
 * Field-level wire schemas: how a value on the wire becomes a domain value. Every conversion reports a zod
 * issue instead of throwing, so a broken response surfaces as one API_BAD_RESPONSE naming the field.
 */
import { z } from 'zod';
import { type Decimal, decimalFromWireNumber, parseDecimal } from '../money.js';

/** The field name given to the money parsers; the zod path names the real field, so it is cut off again. */
const FIELD = 'value';

function convert<T>(parse: (value: unknown) => T) {
  return (value: unknown, ctx: z.RefinementCtx): T => {
    try {
      return parse(value);
    } catch (error) {
      const message = (error as Error).message.replace(`${FIELD}: `, '');
      ctx.addIssue({ code: 'custom', message, input: value });
      return z.NEVER;
    }
  };
}

/** Decimal text (`"5.4321"`); numbers, `"NaN"`, exponents and spaces refused. */
export const decimalText = z.string().transform(convert((value) => parseDecimal(value, FIELD)));

/** Decimal text strictly above zero: prices and rates. */
export const positiveDecimalText = decimalText.refine((value: Decimal) => value.gt(0), {
  message: 'must be greater than zero',
});

/** Decimal text at or above zero: costs, quantities, balances that cannot go negative. */
export const nonNegativeDecimalText = decimalText.refine((value: Decimal) => value.gte(0), {
  message: 'must not be negative',
});

/**
 * Amounts the reference carries as JSON numbers (order amount, tracking amounts). Decimal text is accepted
 * too, so a service that moves to text does not break us.
 */
export const wireAmount = z
  .union([z.number(), z.string()])
  .transform(convert((value) => decimalFromWireNumber(value, FIELD)))
  .refine((value: Decimal) => value.gte(0), { message: 'must not be negative' });

/**
 * ISO 8601 instant with an explicit zone (`Z` or offset). msgpack peers may send a native timestamp, which
 * msgpackr decodes as a Date; that is accepted as well.
 */
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/;
export const isoDate = z.union([
  z.date(),
  z
    .string()
    .regex(ISO_INSTANT, { message: 'expected an ISO 8601 date-time with a zone' })
    .transform((text, ctx) => {
      const date = new Date(text);
      if (Number.isNaN(date.getTime())) {
        ctx.addIssue({ code: 'custom', message: 'not a valid date', input: text });
        return z.NEVER;
      }
      return date;
    }),
]);

export const identifier = z.string().min(1);

export const count = z.number().int().nonnegative();

/**
 * A service may say "not known yet" by leaving a field out, sending null, or sending an empty string
 * (`"finishedAt": ""` on a withdrawal in progress). All three read as absent here, the one place every
 * optional field of an answer goes through; a non-empty value is still checked by `schema`.
 */
function emptyAsAbsent(value: unknown): unknown {
  return value === '' ? undefined : value;
}

/** An optional field whose absence the domain records as null (tracking, withdrawal, webhook events). */
export function pending<T extends z.ZodType>(schema: T) {
  return z.preprocess(emptyAsAbsent, schema.nullish()).transform((value) => value ?? null);
}

/** An optional field whose absence the domain leaves undefined (a quote's `expiresIn`). */
export function optional<T extends z.ZodType>(schema: T) {
  return z.preprocess(emptyAsAbsent, schema.optional());
}

/** quoteId: 8 to 9 letters and digits (the reference gives the length; the alphabet is assumed). Here, not in assumptions.ts, because the
 * quote schema needs it and assumptions.ts builds on the schemas. */
export const QUOTE_ID_PATTERN = /^[A-Za-z0-9]{8,9}$/;

/** Largest believable `expiresIn`: an hour, even if the unit were milliseconds. */
export const MAX_EXPIRES_IN = 3_600_000;
