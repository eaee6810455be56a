/**
 * Array parameters of the posting transaction's set-based statements (batch.ts, batch-reads.ts), written as
 * PostgreSQL array literals.
 */

/**
 * postgres.js sends a JS array of booleans or numbers as one scalar parameter; as text[] (cast in SQL) every
 * element type arrives intact.
 */
export function txt(values: readonly (string | number | boolean | null)[]): (string | null)[] {
  return values.map((v) => (v === null ? null : typeof v === "boolean" ? (v ? "t" : "f") : String(v)));
}

/*
 * Array literals built here rather than by postgres.js (which escapes every element with two regular
 * expressions): the batch write sends about twenty array elements per posting. A string passes through
 * postgres.js's array serializer unchanged and PostgreSQL parses it as the array type the SQL casts it to.
 */

/** `{a,b}`: only for values that never need quoting (ids and uuids this service made or read, numbers). */
export function plain(values: readonly (string | number)[]): string {
  return `{${values.join(",")}}`;
}

/** `{t,f}` for booleans. */
export function bools(values: readonly boolean[]): string {
  let out = "{";
  for (let i = 0; i < values.length; i++) out += i === 0 ? (values[i] ? "t" : "f") : values[i] ? ",t" : ",f";
  return `${out}}`;
}

/** `{NULL,5}` for nullable integers. */
export function ints(values: readonly (number | null)[]): string {
  let out = "{";
  for (let i = 0; i < values.length; i++) {
    if (i > 0) out += ",";
    const v = values[i];
    out += v === null || v === undefined ? "NULL" : String(v);
  }
  return `${out}}`;
}

const NEEDS_ESCAPE = /[\\"]/;
const ESCAPE = /[\\"]/g;

/** Any text (client-supplied too): every element quoted, backslashes and quotes escaped; null is NULL. */
export function quoted(values: readonly (string | null)[]): string {
  let out = "{";
  for (let i = 0; i < values.length; i++) {
    if (i > 0) out += ",";
    const v = values[i];
    if (v === null || v === undefined) out += "NULL";
    else out += NEEDS_ESCAPE.test(v) ? `"${v.replace(ESCAPE, "\\$&")}"` : `"${v}"`;
  }
  return `${out}}`;
}
