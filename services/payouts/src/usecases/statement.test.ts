// Payout statements on fakes: opening + Σ lines = closing to the cent for a mix of sales, refunds, a lost
// dispute, a hold (no line: it moves no balance) released with a transfer, transfers and payouts with creator-paid
// fees; the period runs from the previous payout (exclusive) to this one; CSV per RFC 4180; the hosted page.
import { tenantOf, type Tenant } from "@treasury/contracts";
import { describe, expect, it } from "vitest";
import { fakes, posted, type Fakes } from "../../test/fakes.ts";
import { csvField } from "../domain/statement.ts";
import { statementPage } from "../pages/statement-page.ts";
import { requestPayout } from "./request-payout.ts";
import { getPayoutStatement } from "./statement.ts";

const SANDBOX: Tenant = tenantOf({ org_id: "org_a", livemode: false });
const T0 = Date.UTC(2026, 10, 1);
const at = (minute: number) => new Date(T0 + minute * 60_000);

/** A creator whose payouts become wallet entries (the fee a creator pays is a second entry of the same transaction). */
function books(): { f: Fakes; minute: { n: number } } {
  const f = fakes();
  const minute = { n: 0 };
  f.ledger.addCreator("creator_1", 0);
  f.ledger.answer = (req) => {
    const fee = (req.postings ?? []).find((p) => "system" in p.credit && p.credit.system === "platform_revenue")?.amount ?? 0;
    const amounts = fee > 0 ? [-((req.amount ?? 0) - fee), -fee] : [-(req.amount ?? 0)];
    f.ledger.record("creator_1", req.kind, req.reference_id, amounts, at(++minute.n));
    return posted(req, undefined);
  };
  return { f, minute };
}

async function history(): Promise<{ f: Fakes; first: string; second: string }> {
  const { f, minute } = books();
  const rec = (kind: string, ref: string, amounts: number[]) => f.ledger.record("creator_1", kind, ref, amounts, at(++minute.n));
  rec("checkout_sale", "checkout:cs_1", [10_000]);
  const first = await requestPayout(f.deps, SANDBOX, { participant_id: "creator_1", amount: 3_000, reference_id: "po_ref_1" });
  rec("sale", "sale_2", [5_000]);
  rec("refund", "refund:rf_1", [-1_200]);
  rec("refund", "dispute:dp_1", [-300]);
  // A hold and its release move no balance (no entries); the release executed a transfer to another creator.
  rec("hold_release", "hold_1", [-400]);
  rec("transfer", "tr_in", [250]);
  rec("wallet_withdrawal", "wd_1", [-50]);
  const second = await requestPayout(f.deps, SANDBOX, {
    participant_id: "creator_1",
    amount: 3_000,
    fees: 100,
    fees_paid_by: "creator",
    reference_id: "po_ref_2",
  });
  rec("sale", "sale_after", [999]);
  return { f, first: first.id, second: second.id };
}

describe("payout statements", () => {
  it("the first payout's statement starts at the wallet's first entry", async () => {
    const { f, first } = await history();
    const { statement } = (await getPayoutStatement(f.deps, SANDBOX, first, {})) as { statement: Record<string, unknown> };
    expect(statement).toEqual({
      payout_id: first,
      period_start: at(1).toISOString(),
      period_end: at(2).toISOString(),
      opening_balance_cents: 0,
      lines: [
        { transaction_id: "txn_checkoutcs1", type: "sale", amount_cents: 10_000, occurred_at: at(1).toISOString(), reference: "checkout:cs_1" },
        {
          transaction_id: expect.stringMatching(/^txn_payout/),
          type: "payout",
          amount_cents: -3_000,
          occurred_at: at(2).toISOString(),
          reference: expect.stringMatching(/^payout:po_/),
        },
      ],
      closing_balance_cents: 7_000,
    });
  });

  it("opening + lines = closing from the previous payout (exclusive) to this one, to the cent", async () => {
    const { f, second } = await history();
    const { statement: s } = (await getPayoutStatement(f.deps, SANDBOX, second, {})) as {
      statement: { opening_balance_cents: number; closing_balance_cents: number; lines: { type: string; amount_cents: number }[]; period_start: string };
    };
    expect(s.opening_balance_cents).toBe(7_000);
    expect(s.period_start).toBe(at(2).toISOString());
    expect(s.lines.map((l) => [l.type, l.amount_cents])).toEqual([
      ["sale", 5_000],
      ["refund", -1_200],
      ["dispute", -300],
      ["transfer", -400],
      ["transfer", 250],
      ["adjustment", -50],
      // Gross: the creator-paid fee is part of the payout's own transaction.
      ["payout", -3_000],
    ]);
    expect(s.opening_balance_cents + s.lines.reduce((t, l) => t + l.amount_cents, 0)).toBe(s.closing_balance_cents);
    expect(s.closing_balance_cents).toBe(7_300);
  });

  it("answers CSV as a file: a header, the opening, the lines with running balances, the closing", async () => {
    const { f, first } = await history();
    const answer = (await getPayoutStatement(f.deps, SANDBOX, first, { format: "csv" })) as {
      file: { content_type: string; filename: string; content: string };
    };
    expect(answer.file.content_type).toBe("text/csv; charset=utf-8");
    expect(answer.file.filename).toBe(`statement-${first}.csv`);
    const payoutTxn = [...f.payouts.rows.values()].find((r) => r.id === first)?.transaction_id;
    expect(answer.file.content).toBe(
      [
        "occurred_at,type,transaction_id,reference,amount_cents,balance_cents",
        `${at(1).toISOString()},opening_balance,,,,0`,
        `${at(1).toISOString()},sale,txn_checkoutcs1,checkout:cs_1,10000,10000`,
        `${at(2).toISOString()},payout,${payoutTxn},payout:${first},-3000,7000`,
        `${at(2).toISOString()},closing_balance,,,,7000`,
        "",
      ].join("\r\n"),
    );
  });

  it("quotes CSV fields per RFC 4180", () => {
    expect(csvField("plain")).toBe("plain");
    expect(csvField('say "hi", then\r\nleave')).toBe('"say ""hi"", then\r\nleave"');
    expect(csvField(" padded")).toBe('" padded"');
    // A reference a spreadsheet would run as a formula is kept as text; a negative amount stays a number.
    expect(csvField('=HYPERLINK("x")')).toBe('"\'=HYPERLINK(""x"")"');
    expect(csvField("@sum")).toBe("'@sum");
    expect(csvField(-250)).toBe("-250");
    expect(csvField(-1200)).toBe("-1200");
  });

  it("refuses an unknown or refused payout, and one whose ledger transaction is not recorded yet", async () => {
    const { f, first } = await history();
    await expect(getPayoutStatement(f.deps, SANDBOX, "po_nope", {})).rejects.toMatchObject({ code: "payout_not_found" });
    await expect(getPayoutStatement(f.deps, tenantOf({ org_id: "org_b", livemode: false }), first, {})).rejects.toMatchObject({ code: "payout_not_found" });
    const row = f.payouts.rows.get(first);
    if (row !== undefined) f.payouts.rows.set(first, { ...row, status: "posting", transaction_id: null });
    await expect(getPayoutStatement(f.deps, SANDBOX, first, {})).rejects.toMatchObject({ code: "invalid_state_transition" });
  });

  it("renders the hosted page as an accessible table with amounts from cents", async () => {
    const { f, second } = await history();
    const reply = await statementPage(f.deps, { params: { payout_id: second }, query: {}, form: {}, request_id: "r", client_ip: "", alt_base_url: "" });
    const html = reply.ok ? String((reply.body as { html: string }).html) : "";
    expect(html).toContain('<table id="statement"><caption>');
    expect(html).toContain('<th scope="col">Date</th>');
    expect(html).toMatch(/<tr id="opening"><th scope="row" colspan="4">Opening balance<\/th><td class="num">\$70\.00<\/td>/);
    expect(html).toContain("<td>Refund</td>");
    expect(html).toContain('<td class="num">-$12.00</td>');
    expect(html).toMatch(/<tr id="closing"><th scope="row" colspan="4">Closing balance<\/th><td class="num">\$73\.00<\/td>/);
    expect(html).toContain("Sandbox payout");
  });
});
