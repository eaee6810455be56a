/**
 * The bank lines an import stores (import-transactions.ts): planned from parsed statements or from lines the client
 * read itself, each with the reference that de-duplicates it; lines that cannot be stored are listed as errors.
 */
import { createHash } from "node:crypto";
import type { Statement } from "@treasury/bank-statements";
import { z } from "zod";
import { sortableId } from "../domain/ids.ts";
import type { NewBankLine } from "./rows.ts";

/** The bank account of lines whose statement names none and whose import gives no account_name. */
const UNNAMED_ACCOUNT = "unspecified";

export interface LineError {
  line: number;
  code: string;
  message: string;
}

export interface Planned {
  lines: NewBankLine[];
  /** The statement index of each planned line. */
  statementOf: number[];
  errors: LineError[];
}

/**
 * The de-duplication reference of a line: the bank's own identifier when it gives one, else a digest of the
 * line's text with its occurrence among equal lines of the statement (two equal payments on one day are two
 * lines; the same file imported again gives the same references).
 */
function dedupeRef(t: { reference: string; bank_reference?: string | undefined; description: string }, key: string, seen: Map<string, number>): string {
  const own = t.reference !== "" ? t.reference : (t.bank_reference ?? "");
  if (own !== "") return own;
  const digest = createHash("sha256").update(t.description).digest("hex").slice(0, 16);
  const k = `${key}\u0000${digest}`;
  const n = (seen.get(k) ?? 0) + 1;
  seen.set(k, n);
  return `~${digest}#${n}`;
}

export function planStatements(statements: readonly Statement[], accountName: string | undefined): Planned {
  const planned: Planned = { lines: [], statementOf: [], errors: [] };
  for (const [i, st] of statements.entries()) {
    const account = st.account.id !== "" ? st.account.id : (accountName ?? UNNAMED_ACCOUNT);
    const seen = new Map<string, number>();
    for (const t of st.transactions) {
      if (t.amount === null) {
        planned.errors.push({
          line: t.raw_line_no,
          code: "amount_not_representable",
          message: `amount ${t.amount_decimal} ${t.currency} has more decimals than the currency's minor unit`,
        });
        continue;
      }
      planned.lines.push({
        id: sortableId("bl"),
        bankAccount: account,
        currency: t.currency,
        bookingDate: t.date,
        valueDate: t.value_date ?? null,
        amount: t.amount,
        amountDecimal: t.amount_decimal,
        description: t.description,
        reference: t.reference,
        bankReference: t.bank_reference ?? null,
        counterparty: t.counterparty === undefined ? null : { ...t.counterparty },
        bankCode: t.bank_code ?? null,
        lineNo: t.raw_line_no,
        dedupeRef: dedupeRef(t, `${account}\u0000${t.date}\u0000${t.amount}`, seen),
      });
      planned.statementOf.push(i);
    }
  }
  return planned;
}

/** A line the client read itself (the `transactions` array): 1-based position as its line number. */
const ClientLine = z.object({
  date: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}$/, { message: "must be YYYY-MM-DD" })
    .refine((s) => !Number.isNaN(Date.parse(`${s}T00:00:00Z`)), { message: "must be a date" }),
  value_date: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}$/, { message: "must be YYYY-MM-DD" })
    .optional(),
  amount: z
    .number({ error: "must be an integer number of minor units" })
    .int({ error: "must be an integer number of minor units" })
    .refine(Number.isSafeInteger, { message: "is too large" }),
  currency: z
    .string()
    .regex(/^[A-Z]{3}$/, { message: "must be a 3-letter ISO 4217 code" })
    .default("USD"),
  description: z.string().max(1000).default(""),
  reference: z.string().max(255).default(""),
  bank_account: z.string().min(1).max(100).optional(),
});

export function planClientLines(items: readonly Record<string, unknown>[], accountName: string | undefined): Planned {
  const planned: Planned = { lines: [], statementOf: [], errors: [] };
  const seen = new Map<string, number>();
  for (const [i, item] of items.entries()) {
    const line = i + 1;
    const parsed = ClientLine.safeParse(item);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      planned.errors.push({ line, code: "invalid_line", message: `${issue?.path.join(".") ?? ""}: ${issue?.message ?? "invalid"}` });
      continue;
    }
    const t = parsed.data;
    const account = t.bank_account ?? accountName ?? UNNAMED_ACCOUNT;
    planned.lines.push({
      id: sortableId("bl"),
      bankAccount: account,
      currency: t.currency,
      bookingDate: t.date,
      valueDate: t.value_date ?? null,
      amount: t.amount,
      amountDecimal: decimalOf(t.amount),
      description: t.description,
      reference: t.reference,
      bankReference: null,
      counterparty: null,
      bankCode: null,
      lineNo: line,
      dedupeRef: dedupeRef(t, `${account}\u0000${t.date}\u0000${t.amount}`, seen),
    });
    planned.statementOf.push(0);
  }
  return planned;
}

/** Minor units written as a two-decimal string (client lines carry no currency precision of their own). */
function decimalOf(minor: number): string {
  const abs = Math.abs(minor);
  return `${minor < 0 ? "-" : ""}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, "0")}`;
}
