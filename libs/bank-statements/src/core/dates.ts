/** ISO `YYYY-MM-DD` for a real calendar day, or null. */
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

export function isoDate(year: number, month: number, day: number): string | null {
  if (!Number.isInteger(year) || !Number.isInteger(month) || !Number.isInteger(day) || month < 1 || month > 12 || day < 1) return null;
  const daysInMonth = month === 2 && isLeapYear(year) ? 29 : (DAYS_IN_MONTH[month - 1] as number);
  if (day > daysInMonth) return null;
  return `${String(year).padStart(4, "0")}-${String(month).padStart(2, "0")}-${String(day).padStart(2, "0")}`;
}

/** Two-digit years: 70–99 are 19xx, 00–69 are 20xx (the window SWIFT and BAI files in use need). */
export function fullYear(yy: number): number {
  return yy >= 70 ? 1900 + yy : 2000 + yy;
}

/** `YYMMDD` → ISO, or null. */
export function fromYymmdd(text: string): string | null {
  const m = /^(\d\d)(\d\d)(\d\d)$/.exec(text);
  if (!m) return null;
  return isoDate(fullYear(Number(m[1])), Number(m[2]), Number(m[3]));
}

/** `YYYYMMDD…` (OFX dates carry time and zone after the day; the day is taken as written). */
export function fromYyyymmdd(text: string): string | null {
  const m = /^(\d{4})(\d\d)(\d\d)/.exec(text.trim());
  if (!m) return null;
  return isoDate(Number(m[1]), Number(m[2]), Number(m[3]));
}

/** `YYYY-MM-DD` or an ISO date-time: the calendar day as written, without shifting time zones. */
export function fromIsoDateTime(text: string): string | null {
  const m = /^(\d{4})-(\d\d)-(\d\d)/.exec(text.trim());
  if (!m) return null;
  return isoDate(Number(m[1]), Number(m[2]), Number(m[3]));
}
