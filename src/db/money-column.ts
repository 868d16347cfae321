import { customType } from 'drizzle-orm/pg-core';
import { Decimal, toDecimalText } from '../money.js';

/**
 * A `numeric` column read and written as `Decimal`. The column is declared without precision or scale so
 * that PostgreSQL keeps exactly the digits it was given (18 fractional places for crypto quantities and
 * anything the service may send later) instead of rounding silently on insert. Both drivers hand numeric
 * values over as text, so no value ever passes through a JS number.
 */
export const moneyColumn = customType<{ data: Decimal; driverData: string | null }>({
  dataType: () => 'numeric',
  // drizzle skips the encoder for a literal null but not for a null bound to a prepared placeholder.
  toDriver: (value: Decimal | null) => (value === null ? null : toDecimalText(value)),
  fromDriver: (value) => new Decimal(String(value)),
});
