/**
 * Exact decimal arithmetic for amounts. A value is an integer count of units at a scale (`units / 10^scale`),
 * held as a bigint, so nothing ever passes through a binary float.
 */
export interface Decimal {
  units: bigint;
  scale: number;
}

export interface DecimalSyntax {
  decimalSeparator?: string;
  thousandsSeparator?: string;
}

/** Longer digit strings are not amounts: refusing them keeps bigint work bounded. */
const DIGITS_MAX = 30;

/**
 * Parse a written amount: an optional sign, digits (optionally grouped by the thousands separator), and an
 * optional fraction after the decimal separator. "9," (MT940) and ".5" are accepted. Returns null when the text
 * is not such a number.
 */
export function parseDecimal(text: string, syntax: DecimalSyntax = {}): Decimal | null {
  const decimalSeparator = syntax.decimalSeparator ?? ".";
  let s = text.trim();
  let negative = false;
  if (s.startsWith("-") || s.startsWith("+")) {
    negative = s.startsWith("-");
    s = s.slice(1).trimStart();
  }
  const thousands = syntax.thousandsSeparator;
  if (thousands) s = s.split(thousands).join("");
  const cut = s.indexOf(decimalSeparator);
  const intPart = cut < 0 ? s : s.slice(0, cut);
  const fracPart = cut < 0 ? "" : s.slice(cut + decimalSeparator.length);
  if (intPart === "" && fracPart === "") return null;
  if (!/^\d*$/.test(intPart) || !/^\d*$/.test(fracPart)) return null;
  if (intPart.length + fracPart.length > DIGITS_MAX) return null;
  const units = BigInt(intPart + fracPart || "0");
  return { units: negative ? -units : units, scale: fracPart.length };
}

function pow10(n: number): bigint {
  return 10n ** BigInt(n);
}

/** The same value at a larger scale (never loses digits). */
function rescale(d: Decimal, scale: number): bigint {
  return d.units * pow10(scale - d.scale);
}

export function addDecimal(a: Decimal, b: Decimal): Decimal {
  const scale = Math.max(a.scale, b.scale);
  return { units: rescale(a, scale) + rescale(b, scale), scale };
}

export function subDecimal(a: Decimal, b: Decimal): Decimal {
  return addDecimal(a, negateDecimal(b));
}

export function negateDecimal(d: Decimal): Decimal {
  return { units: -d.units, scale: d.scale };
}

export function isZero(d: Decimal): boolean {
  return d.units === 0n;
}

export function isNegative(d: Decimal): boolean {
  return d.units < 0n;
}

/** "-34.51", "18.150", "9": every written decimal is kept; minus zero prints as zero. */
export function formatDecimal(d: Decimal): string {
  const negative = d.units < 0n;
  const digits = (negative ? -d.units : d.units).toString().padStart(d.scale + 1, "0");
  const whole = d.scale === 0 ? digits : `${digits.slice(0, -d.scale)}.${digits.slice(-d.scale)}`;
  return negative ? `-${whole}` : whole;
}

/**
 * The value as an integer number of minor units with `exponent` decimals, or null when it has non-zero digits
 * beyond them or does not fit a safe integer.
 */
export function toMinorUnits(d: Decimal, exponent: number): number | null {
  let minor: bigint;
  if (d.scale <= exponent) {
    minor = rescale(d, exponent);
  } else {
    const divisor = pow10(d.scale - exponent);
    if (d.units % divisor !== 0n) return null;
    minor = d.units / divisor;
  }
  if (minor > BigInt(Number.MAX_SAFE_INTEGER) || minor < -BigInt(Number.MAX_SAFE_INTEGER)) return null;
  return Number(minor);
}
