/** Bank statement imports (docs/api.md, Transactions and accounting: import-transactions). */
import { z } from "zod";
import { obj, str } from "./common.ts";

export const IMPORT_ACTIONS = ["parse_preview", "import", "get_templates", "save_template"] as const;
export const IMPORT_FORMATS = ["csv", "ofx", "qfx", "camt053", "bai2", "mt940", "auto"] as const;
/**
 * import-transactions. `data` is the statement's text; with `data_encoding: "base64"` it is the file's bytes in
 * base64 (for files that are not UTF-8, e.g. a latin1 CSV, whose bytes must reach the reader unchanged). CSV
 * needs a `mapping` or a saved `template_id`; `save_template` takes `template: {name, mapping, description}`
 * (a template of the same name is replaced). `transactions` imports lines already read by the client (each
 * `{date, amount (signed minor units), currency, description, reference, bank_account}`) instead of `data`.
 * `preview_limit` bounds the lines parse_preview returns per statement (default and maximum 1000; the counts
 * and totals always cover every line).
 */
export const ImportTransactionsBody = z.object({
  action: z.enum(IMPORT_ACTIONS, { error: `action must be one of ${IMPORT_ACTIONS.join(", ")}` }),
  format: z.enum(IMPORT_FORMATS, { error: `format must be one of ${IMPORT_FORMATS.join(", ")}` }).optional(),
  data: z
    .string({ error: "must be a string" })
    .max(1024 * 1024)
    .optional(),
  data_encoding: z.enum(["text", "base64"], { error: "must be text or base64" }).optional(),
  mapping: obj.optional(),
  template_id: str(100).optional(),
  template: z
    .object(
      { name: str(100).min(1), mapping: obj, format: z.literal("csv", { error: "templates are for csv" }).optional(), description: str(1000).optional() },
      { error: "must be an object" },
    )
    .optional(),
  transactions: z.array(obj).max(10_000).optional(),
  account_name: str(255).optional(),
  preview_limit: z.number({ error: "must be a number" }).int().min(0).max(1000).optional(),
});
