/**
 * Live payout rail operations (`npm run admin -- payouts …`): cutting a NACHA file, settling filed payouts, and
 * ingesting the bank's return file. They run here, where the rail's configuration and the keys that open account
 * numbers are. Each moves money through the ledger in transactions of its own, so each is recorded once its
 * outcome is known; the row keeps the request id, so `admin find <request id>` shows the events the call caused.
 */
import { DomainError, parseOrThrow, type AdminRequest } from "@treasury/contracts";
import { flag, requiredFlag, type AdminAudit, type Service } from "@treasury/service-kit";
import { z } from "zod";
import { cutFile } from "../usecases/cut-file.ts";
import type { PayoutsDeps } from "../usecases/deps.ts";
import { ingestReturns, type ReturnsResult } from "../usecases/returns.ts";
import { settleDue } from "../usecases/settle.ts";

const SettleRequest = z.object({
  date: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}$/, { message: "must be YYYY-MM-DD" })
    .refine((d) => !Number.isNaN(Date.parse(`${d}T00:00:00Z`)), { message: "must be a real date" }),
});
const ReturnFile = z.object({ name: z.string(), content: z.string().min(1) });
type ReturnFile = z.infer<typeof ReturnFile>;

/** Every payout an answer names: filed, settled, failed, already failed or left for the reconciler. */
function payoutIdsOf(result: Record<string, unknown> | undefined): string[] {
  const r = (result ?? {}) as {
    payout_ids?: string[];
    settled?: string[];
    failed?: { payout_id: string }[];
    already_failed?: string[];
    pending?: { payout_id: string }[];
    cancelled?: { payout_id: string }[];
    notices?: { payout_id: string | null; outcome: string }[];
  };
  return [
    ...(r.payout_ids ?? []),
    ...(r.settled ?? []),
    ...(r.failed ?? []).map((f) => f.payout_id),
    ...(r.already_failed ?? []),
    ...(r.pending ?? []).map((p) => p.payout_id),
    ...(r.cancelled ?? []).map((c) => c.payout_id),
    ...(r.notices ?? []).flatMap((n) => (n.outcome === "applied" && n.payout_id !== null ? [n.payout_id] : [])),
  ];
}

function railAudit(details: (request: AdminRequest, result: Record<string, unknown> | undefined) => Record<string, unknown>): AdminAudit<unknown> {
  return {
    atomic: false,
    // Bank files span orgs: the payouts' ids say whose money moved.
    target: ({ request }, result) => ({ livemode: true, targetIds: payoutIdsOf(result), details: details(request, result) }),
  };
}

function cutDetails(result: Record<string, unknown> | undefined): Record<string, unknown> {
  const file = (result as { file?: { name?: string; entry_count?: number; total_credit_cents?: number } | null } | undefined)?.file;
  return { file: file?.name ?? null, entry_count: file?.entry_count ?? null, total_credit_cents: file?.total_credit_cents ?? null };
}

/**
 * What a return file's audit row keeps: the notices applied (whose account, what changed, its last four digits:
 * never an account number), those not applied with why, and the bank accounts the returns disabled.
 */
function returnsDetails(request: AdminRequest, result: Record<string, unknown> | undefined): Record<string, unknown> {
  const r = result as Partial<ReturnsResult> | undefined;
  const notices = r?.notices ?? [];
  return {
    file: request.file?.name ?? request.positionals[0] ?? null,
    unmatched: r?.unmatched?.length ?? null,
    notices_applied: notices
      .filter((n) => n.outcome === "applied")
      .map((n) => ({
        payout_id: n.payout_id,
        participant_id: n.participant_id,
        trace_number: n.trace_number,
        change_code: n.change_code,
        changed: n.changed,
        last4: n.account?.last4 ?? null,
      })),
    notices_not_applied: notices
      .filter((n) => n.outcome === "not_applied")
      .map((n) => ({ trace_number: n.trace_number, change_code: n.change_code, reason: n.reason })),
    bank_accounts_disabled: (r?.failed ?? []).filter((f) => f.bank_account_disabled).map((f) => ({ payout_id: f.payout_id, return_code: f.return_code })),
    payouts_cancelled: (r?.cancelled ?? []).map((c) => c.payout_id),
  };
}

function returnFileOf(request: AdminRequest): ReturnFile {
  if (request.file === undefined) throw new DomainError("validation_error", "missing FILE");
  return parseOrThrow(ReturnFile, request.file);
}

export function registerAdminCommands(svc: Pick<Service, "handleAdmin">, deps: PayoutsDeps): void {
  svc.handleAdmin("payouts cut-file", {
    decode: () => undefined,
    audit: railAudit((_request, result) => cutDetails(result)),
    run: async () => ({ ...(await cutFile(deps)) }),
  });
  svc.handleAdmin<string>("payouts settle", {
    decode: (request) => parseOrThrow(SettleRequest, { date: requiredFlag(request, "date") }).date,
    audit: railAudit((request) => ({ date: flag(request, "date") ?? null })),
    run: async ({ input }) => ({ ...(await settleDue(deps, input)) }),
  });
  svc.handleAdmin<ReturnFile>("payouts ingest-returns", {
    decode: returnFileOf,
    audit: railAudit(returnsDetails),
    run: async ({ input }) => ({ ...(await ingestReturns(deps, input.content)) }),
  });
}
