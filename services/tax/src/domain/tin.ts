/**
 * Taxpayer identification numbers as a W-9 carries them. The format (9 digits) is checked by the contracts; the
 * rules of each type here: an SSN's area is never 000, 666 or 900–999, its group never 00 and its serial never
 * 0000 (SSA); an ITIN starts with 9 and its middle digits are 50–65, 70–88, 90–92 or 94–99 (IRS); an EIN's prefix
 * is one the IRS assigns (its list of valid EIN prefixes). Problems name the rule, never the digits.
 */
import type { schemas } from "@treasury/contracts";

const EIN_PREFIXES_INVALID = new Set(["00", "07", "08", "09", "17", "18", "19", "28", "29", "49", "69", "70", "78", "79", "89", "96", "97"]);

/** The nine digits of a TIN written with or without dashes. */
export function tinDigits(tin: string): string {
  return tin.replace(/-/g, "");
}

function ssnProblem(d: string): string | undefined {
  const area = Number(d.slice(0, 3));
  if (area === 0 || area === 666 || area >= 900) return "an SSN's area (first three digits) cannot be 000, 666 or 900–999";
  if (d.slice(3, 5) === "00") return "an SSN's group (digits 4–5) cannot be 00";
  if (d.slice(5) === "0000") return "an SSN's serial (last four digits) cannot be 0000";
  return undefined;
}

function itinProblem(d: string): string | undefined {
  if (d[0] !== "9") return "an ITIN starts with 9";
  const mid = Number(d.slice(3, 5));
  const ok = (mid >= 50 && mid <= 65) || (mid >= 70 && mid <= 88) || (mid >= 90 && mid <= 92) || (mid >= 94 && mid <= 99);
  return ok ? undefined : "an ITIN's digits 4–5 are 50–65, 70–88, 90–92 or 94–99";
}

function einProblem(d: string): string | undefined {
  return EIN_PREFIXES_INVALID.has(d.slice(0, 2)) ? "an EIN's prefix (first two digits) is not one the IRS assigns" : undefined;
}

/** What is wrong with this TIN for its type, or undefined when it may be valid. */
export function tinProblem(type: schemas.TinType, tin: string): string | undefined {
  const d = tinDigits(tin);
  if (!/^\d{9}$/.test(d)) return "must be 9 digits";
  if (type === "ssn") return ssnProblem(d);
  if (type === "itin") return itinProblem(d);
  return einProblem(d);
}
