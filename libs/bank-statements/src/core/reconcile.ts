import { addDecimal, formatDecimal, isZero, parseDecimal, subDecimal, toMinorUnits, type Decimal } from "./decimal.ts";
import { minorUnits } from "./currency.ts";
import type { Balance, Reconciliation, StatementTransaction } from "./types.ts";

function unchecked(reason: string): Reconciliation {
  return { reconciles: null, difference: null, difference_decimal: null, reason };
}

function decimalOf(amountDecimal: string): Decimal {
  const d = parseDecimal(amountDecimal);
  // Every amount_decimal was printed by formatDecimal, so it always parses back.
  if (d === null) throw new Error(`internal: unparsable amount_decimal ${amountDecimal}`);
  return d;
}

/**
 * Opening balance + transactions = closing balance, in exact decimals. A statement without both balances, or
 * whose balances or lines are in another currency than the account, is reported as unchecked, not as failing.
 */
export function reconcile(
  currency: string,
  opening: Balance | undefined,
  closing: Balance | undefined,
  transactions: readonly StatementTransaction[],
): Reconciliation {
  if (!opening || !closing) return unchecked(`the statement has no ${opening ? "closing" : "opening"} balance`);
  if (opening.currency !== currency || closing.currency !== currency) {
    return unchecked(`balances are in ${opening.currency}/${closing.currency}, the account in ${currency}`);
  }
  let sum: Decimal = { units: 0n, scale: 0 };
  for (const t of transactions) {
    if (t.currency !== currency) return unchecked(`a transaction on line ${t.raw_line_no} is in ${t.currency}, the account in ${currency}`);
    sum = addDecimal(sum, decimalOf(t.amount_decimal));
  }
  const diff = subDecimal(decimalOf(closing.amount_decimal), addDecimal(decimalOf(opening.amount_decimal), sum));
  const exponent = minorUnits(currency);
  return {
    reconciles: isZero(diff),
    difference: exponent === null ? null : toMinorUnits(diff, exponent),
    difference_decimal: formatDecimal(diff),
  };
}
