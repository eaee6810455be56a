/**
 * ISO 4217 minor units ("list one", the current table). Nearly every currency has two decimals, so only the
 * exceptions are listed. Codes ISO marks "N.A." (precious metals, SDR, bond-market units, test codes) have no
 * minor unit: their amounts stay decimal strings only. Withdrawn codes (DEM, FRF…) still appear in old
 * statements; they get two decimals, which is what they had.
 */
const MINOR_UNITS: Readonly<Record<string, number | null>> = {
  BIF: 0,
  CLP: 0,
  DJF: 0,
  GNF: 0,
  ISK: 0,
  JPY: 0,
  KMF: 0,
  KRW: 0,
  PYG: 0,
  RWF: 0,
  UGX: 0,
  UYI: 0,
  VND: 0,
  VUV: 0,
  XAF: 0,
  XOF: 0,
  XPF: 0,
  BHD: 3,
  IQD: 3,
  JOD: 3,
  KWD: 3,
  LYD: 3,
  OMR: 3,
  TND: 3,
  CLF: 4,
  UYW: 4,
  XAG: null,
  XAU: null,
  XBA: null,
  XBB: null,
  XBC: null,
  XBD: null,
  XDR: null,
  XPD: null,
  XPT: null,
  XSU: null,
  XTS: null,
  XUA: null,
  XXX: null,
};

const DEFAULT_MINOR_UNITS = 2;

export function isCurrencyCode(code: string): boolean {
  return /^[A-Z]{3}$/.test(code);
}

/** Decimals of the currency's minor unit, or null when it has none. */
export function minorUnits(code: string): number | null {
  const units = MINOR_UNITS[code];
  return units === undefined ? DEFAULT_MINOR_UNITS : units;
}
