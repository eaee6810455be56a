import { z } from "zod";
import { StatementError } from "../core/errors.ts";

/** A column: its header text (exact, then case-insensitive) or its 0-based index. */
const Column = z.union([z.string().min(1).max(200), z.number().int().min(0).max(1000)]);

export const DATE_FORMATS = [
  "YYYY-MM-DD",
  "YYYYMMDD",
  "MM/DD/YYYY",
  "DD/MM/YYYY",
  "DD.MM.YYYY",
  "DD-MM-YYYY",
  "MM-DD-YYYY",
  "YYYY/MM/DD",
  "DD.MM.YY",
  "MM/DD/YY",
  "DD/MM/YY",
] as const;

/**
 * How to read a bank's CSV export. Either `amount` (signed) or `debit` and/or `credit` (unsigned, one per row)
 * must be given, with `date` and a currency (`currency` fixed, or `currency_column`).
 */
export const CsvMappingSchema = z
  .object({
    date: Column,
    date_format: z.enum(DATE_FORMATS).default("YYYY-MM-DD"),
    value_date: Column.optional(),
    amount: Column.optional(),
    debit: Column.optional(),
    credit: Column.optional(),
    /** Flip the sign of `amount` (card exports where a purchase is positive). */
    invert_sign: z.boolean().default(false),
    description: z.union([Column, z.array(Column).min(1).max(20)]).optional(),
    reference: Column.optional(),
    counterparty: Column.optional(),
    balance: Column.optional(),
    account: Column.optional(),
    account_id: z.string().min(1).max(100).optional(),
    currency: z
      .string()
      .regex(/^[A-Z]{3}$/)
      .optional(),
    currency_column: Column.optional(),
    decimal_separator: z.enum([".", ","]).default("."),
    thousands_separator: z.enum(["", ",", ".", " ", "'", "\u00a0", "\u202f"]).default(""),
    delimiter: z.enum(["auto", ",", ";", "\t", "|"]).default("auto"),
    /** Rows before the header (bank preambles). */
    skip_rows: z.number().int().min(0).max(100).default(0),
    has_header: z.boolean().default(true),
    encoding: z.enum(["utf-8", "latin1", "iso-8859-1", "windows-1252", "utf-16le"]).optional(),
  })
  .strict()
  .refine((m) => m.amount !== undefined || m.debit !== undefined || m.credit !== undefined, {
    message: "give amount, or debit and/or credit",
    path: ["amount"],
  })
  .refine((m) => m.amount === undefined || (m.debit === undefined && m.credit === undefined), {
    message: "give amount or debit/credit, not both",
    path: ["amount"],
  })
  .refine((m) => m.currency !== undefined || m.currency_column !== undefined, { message: "give currency or currency_column", path: ["currency"] })
  .refine((m) => m.decimal_separator !== m.thousands_separator, { message: "the decimal and thousands separators must differ", path: ["thousands_separator"] });

export type CsvMappingInput = z.input<typeof CsvMappingSchema>;
export type CsvMapping = z.output<typeof CsvMappingSchema>;
export type ColumnRef = z.output<typeof Column>;

/** Validate a mapping from a caller; problems become `invalid_mapping` naming the field. */
export function parseCsvMapping(input: unknown): CsvMapping {
  if (input === undefined || input === null)
    throw new StatementError("mapping_required", "CSV statements need a mapping (date, amount or debit/credit, currency)", { field: "mapping" });
  const result = CsvMappingSchema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const path = issue?.path.join(".") ?? "";
  throw new StatementError("invalid_mapping", `mapping${path ? `.${path}` : ""}: ${issue?.message ?? "invalid"}`, { field: path || "mapping", path });
}
