/**
 * Live payout rail operations. They run in the payouts service, which holds the rail's configuration and the
 * keys that open account numbers: the CLI asks it over NATS (NATS_URL and NATS_PREFIX, else the dev stack's) and
 * prints its answer. Each call carries a fresh request id, kept in the audit row, so `admin find <request id>`
 * shows the events the call caused.
 */
import { readFileSync } from "node:fs";
import { DomainError, newRequestId, rpcSubject } from "@treasury/contracts";
import { connectNats, rpcCall } from "@treasury/service-kit";
import { ADMIN_OPERATIONS, RETURN_FILE_MAX_BYTES } from "../../services/payouts/src/handlers/index.ts";
import type { AuditSpec, AuditTarget, Commands } from "./command.ts";
import { natsUrl, need, type Ctx } from "./context.ts";

const PAYOUTS_ADMIN_TIMEOUT_MS = 120_000;

async function payoutsCall(ctx: Ctx, operation: string, payload: unknown): Promise<unknown> {
  const requestId = newRequestId();
  ctx.facts["request_id"] = requestId;
  const nc = await connectNats({ url: natsUrl(), name: "admin-cli" });
  try {
    const subject = rpcSubject(process.env.NATS_PREFIX ?? "", "payouts", operation);
    const reply = await rpcCall(nc, subject, payload, { timeoutMs: PAYOUTS_ADMIN_TIMEOUT_MS, requestId });
    if (!reply.ok) throw new DomainError(reply.error.code, reply.error.message);
    return reply.body;
  } finally {
    await nc.close();
  }
}

function payoutIdsOf(result: unknown): string[] {
  const r = (result ?? {}) as {
    payout_ids?: string[];
    settled?: string[];
    failed?: { payout_id: string }[];
    already_failed?: string[];
    pending?: { payout_id: string }[];
  };
  return [
    ...(r.payout_ids ?? []),
    ...(r.settled ?? []),
    ...(r.failed ?? []).map((f) => f.payout_id),
    ...(r.already_failed ?? []),
    ...(r.pending ?? []).map((p) => p.payout_id),
  ];
}

function railAudit(action: string, details: (ctx: Ctx, result: unknown) => Record<string, unknown>): AuditSpec {
  return {
    action,
    atomic: false,
    // Bank files span orgs: the payouts' ids say whose money moved.
    target: (ctx, _q, result): AuditTarget => ({
      livemode: true,
      targetIds: [...new Set(payoutIdsOf(result))],
      details: details(ctx, result),
    }),
  };
}

export const payoutsCommands: Commands = {
  "payouts cut-file": {
    usage: "payouts cut-file [--reason TEXT]   → {file, payout_ids}: waiting live payouts go into one NACHA file in the drop directory",
    audit: railAudit("payouts.cut-file", (_ctx, result) => {
      const file = (result as { file?: { name?: string; entry_count?: number; total_credit_cents?: number } | null } | undefined)?.file;
      return { file: file?.name ?? null, entry_count: file?.entry_count ?? null, total_credit_cents: file?.total_credit_cents ?? null };
    }),
    run: (ctx) => payoutsCall(ctx, ADMIN_OPERATIONS.cutFile, {}),
  },
  "payouts settle": {
    usage:
      "payouts settle --date YYYY-MM-DD [--reason TEXT]   → {as_of, settled, pending}: processing payouts filed a settlement window before that date are paid",
    audit: railAudit("payouts.settle", (ctx) => ({ date: ctx.values.date ?? null })),
    run: (ctx) => payoutsCall(ctx, ADMIN_OPERATIONS.settle, { date: need(ctx.values.date, "--date") }),
  },
  "payouts ingest-returns": {
    usage:
      "payouts ingest-returns FILE [--reason TEXT]   → {failed, already_failed, unmatched, notices, pending}: the bank's NACHA return file fails the payouts it returns",
    positionals: 1,
    audit: railAudit("payouts.ingest-returns", (ctx, result) => ({
      file: ctx.positionals[0] ?? null,
      unmatched: (result as { unmatched?: unknown[] } | undefined)?.unmatched?.length ?? null,
    })),
    run(ctx) {
      const path = need(ctx.positionals[0], "FILE");
      const content = readFileSync(path, "latin1");
      if (content.length > RETURN_FILE_MAX_BYTES) throw new Error(`${path} is larger than ${RETURN_FILE_MAX_BYTES} bytes`);
      return payoutsCall(ctx, ADMIN_OPERATIONS.ingestReturns, { name: path, content });
    },
  },
};
