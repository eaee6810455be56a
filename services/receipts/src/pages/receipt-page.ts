/**
 * The hosted receipt page (alt listener, authorised by the unguessable receipt id in the path, never an API
 * key): what was bought, from whom, when and for how much, and the signed ledger proof with what an outsider
 * needs to check it. Printable: the print style sheet keeps every fact and drops the on-screen hints.
 */
import { DomainError, type PageRequest, type RpcReply } from "@treasury/contracts";
import { proofOf } from "../usecases/get-proof.ts";
import type { ProofRow, ReceiptRow, ReceiptsDeps } from "../usecases/ports.ts";
import { esc, page, usd } from "./html.ts";

const RECEIPT_ID_RE = /^rcpt_[A-Za-z0-9]{1,64}$/;

async function loadReceipt(deps: ReceiptsDeps, req: PageRequest): Promise<ReceiptRow> {
  const id = req.params["receipt_id"] ?? "";
  const row = RECEIPT_ID_RE.test(id) ? await deps.receipts.findForPage(id) : undefined;
  if (row === undefined) throw new DomainError("receipt_not_found", "This receipt does not exist.");
  return row;
}

/** The proof, made now if this is its first fetch; a receipt is still worth showing when signing is unavailable. */
async function proofFor(deps: ReceiptsDeps, row: ReceiptRow): Promise<ProofRow | undefined> {
  try {
    return await proofOf(deps, { orgId: row.org_id, livemode: row.livemode }, row.sale_transaction_id);
  } catch (e) {
    if (e instanceof DomainError) return undefined;
    throw e;
  }
}

const factRow = (label: string, id: string, value: string) => `<tr><th scope="row">${esc(label)}</th><td id="${id}">${value}</td></tr>`;

function facts(r: ReceiptRow): string {
  const rows = [
    factRow("Receipt", "receipt-id", `<code>${esc(r.id)}</code>`),
    factRow("Date", "sold-at", esc(r.sold_at.toISOString().replace("T", " ").slice(0, 16) + " UTC")),
    ...(r.order_id === null ? [] : [factRow("Order", "order-id", esc(r.order_id))]),
    ...(r.external_order_id === null ? [] : [factRow("External order", "external-order-id", esc(r.external_order_id))]),
    ...(r.sales_tax > 0 ? [factRow("Sales tax", "sales-tax", esc(usd(r.sales_tax)))] : []),
    factRow("Total", "total", `${esc(usd(r.total_amount))} ${esc(r.currency)}`),
    factRow("Ledger transaction", "sale-transaction-id", `<code>${esc(r.sale_transaction_id)}</code>`),
  ];
  return `<table id="facts"><tbody>${rows.join("")}</tbody></table>`;
}

function proofSection(altBase: string, p: ProofRow | undefined): string {
  if (p === undefined) return `<h2>Ledger proof</h2><p class="muted" id="proof-pending">The signed ledger proof is not available yet.</p>`;
  const rows = [
    factRow("Receipt hash (SHA-256)", "receipt-hash", `<code>${esc(p.receipt_hash)}</code>`),
    factRow("Chain position", "chain-sequence", esc(String(p.sequence))),
    factRow("Entry hash", "entry-hash", `<code>${esc(p.entry_hash)}</code>`),
    factRow("Signed by key", "signature-kid", `<code>${esc(p.signature_kid)}</code> (${esc(p.signature_alg)})`),
  ];
  return (
    `<h2>Ledger proof</h2><table id="proof"><tbody>${rows.join("")}</tbody></table>` +
    `<p class="muted screen-only" id="verify-note">The receipt hash is the SHA-256 of the transaction as the ledger recorded it (RFC 8785 JSON). ` +
    `Anyone can check the signature with the public keys at <a href="${esc(altBase)}/v1/receipts/jwks" id="jwks-link">${esc(altBase)}/v1/receipts/jwks</a>.</p>`
  );
}

export async function receiptPage(deps: ReceiptsDeps, req: PageRequest): Promise<RpcReply> {
  const row = await loadReceipt(deps, req);
  const proof = await proofFor(deps, row);
  const sandbox = row.livemode ? "" : `<p class="sandbox" id="sandbox-note">Sandbox receipt: no real money moved.</p>`;
  const body =
    `<p class="muted">Receipt from <span id="merchant">${esc(row.merchant_name ?? "")}</span></p>` +
    `<h1 id="product">${esc(row.product_name ?? row.description ?? "Purchase")}</h1>` +
    `<div class="amount" id="amount">${esc(usd(row.total_amount))} <span class="muted">${esc(row.currency)}</span></div>` +
    sandbox +
    facts(row) +
    proofSection(req.alt_base_url.replace(/\/+$/, ""), proof) +
    `<p class="muted screen-only">Use your browser's Print command for a paper or PDF copy.</p>`;
  return page(200, `Receipt · ${row.merchant_name ?? row.id}`, body);
}
