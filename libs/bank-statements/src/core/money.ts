import { formatDecimal, toMinorUnits, type Decimal } from "./decimal.ts";
import { minorUnits } from "./currency.ts";
import type { ExactAmount } from "./types.ts";
import type { Warnings } from "./warnings.ts";

/** An exact amount in a currency; warns (with the line) when the minor-unit integer cannot hold it. */
export function exactAmount(d: Decimal, currency: string, warnings: Warnings, line: number): ExactAmount {
  const exponent = minorUnits(currency);
  const amount = exponent === null ? null : toMinorUnits(d, exponent);
  if (amount === null) {
    warnings.add(
      "amount_not_representable",
      `${formatDecimal(d)} ${currency} has more decimals than the currency's minor unit; kept as a decimal string only`,
      line,
    );
  }
  return { amount, amount_decimal: formatDecimal(d), currency };
}
