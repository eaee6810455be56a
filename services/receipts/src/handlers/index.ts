/** RPC handlers of receipts: decode with the shared contracts → use case → named-key body; the handler picks the status. */
import { DomainError, parseOrThrow, schemas, tenantOf, type RpcRequest } from "@treasury/contracts";
import type { RpcHandler, Service } from "@treasury/service-kit";
import { receiptPage } from "../pages/receipt-page.ts";
import { generateReceipt } from "../usecases/generate-receipt.ts";
import { getReceiptProof, getTransactionProof } from "../usecases/get-proof.ts";
import { loadReceipt } from "../usecases/get-receipt.ts";
import { jwks } from "../usecases/jwks.ts";
import type { ReceiptsDeps } from "../usecases/ports.ts";
import { presentProof, presentReceipt, presentSignature } from "../usecases/present.ts";
import { submitSignature } from "../usecases/submit-signature.ts";
import { verifyProof } from "../usecases/verify-proof.ts";

function param(req: RpcRequest, name: string): string {
  const v = req.params[name];
  if (v === undefined || v === "") throw new DomainError("validation_error", `Missing path parameter ${name}`);
  return v;
}

function altBase(req: RpcRequest): string {
  const base = req.alt_base_url;
  if (base === undefined || base === "") throw new Error("the gateway sent no alt_base_url");
  return base;
}

export function registerHandlers(svc: Pick<Service, "handle" | "handlePage">, deps: ReceiptsDeps): void {
  const ops: Record<string, RpcHandler> = {
    generateReceipt: async (req) => {
      const { receipt, created } = await generateReceipt(deps, tenantOf(req.auth), parseOrThrow(schemas.GenerateReceiptBody, req.body), altBase(req));
      return { status: created ? 201 : 200, body: { created, receipt_id: receipt.id, hosted_url: receipt.hosted_url, receipt: presentReceipt(receipt) } };
    },
    getReceipt: async (req) => {
      const row = await loadReceipt(deps.receipts, tenantOf(req.auth), param(req, "receipt_id"));
      return { body: { receipt_id: row.id, hosted_url: row.hosted_url, receipt: presentReceipt(row) } };
    },
    getReceiptProof: async (req) => ({ body: { proof: await getReceiptProof(deps, tenantOf(req.auth), param(req, "receipt_id")) } }),
    getTransactionReceiptProof: async (req) => ({ body: { proof: await getTransactionProof(deps, tenantOf(req.auth), param(req, "transaction_id")) } }),
    submitReceiptProofSignature: async (req) => {
      const s = await submitSignature(deps, tenantOf(req.auth), param(req, "receipt_id"), parseOrThrow(schemas.ProofSignatureBody, req.body));
      return { status: 201, body: { signature: presentSignature(s.signature), proof: presentProof(s.proof, s.receiptId, s.signatures) } };
    },
    verifyReceiptProof: async (req) => ({ body: await verifyProof(deps, tenantOf(req.auth), parseOrThrow(schemas.VerifyReceiptBody, req.body)) }),
    // The JWKS route takes no API key: the keys are the service's, not an org's, and public by design.
    getReceiptJwks: async () => ({ body: await jwks(deps.keyring) }),
  };
  for (const [operation, handler] of Object.entries(ops)) svc.handle(operation, handler);
  svc.handlePage("page.receipt", (req) => receiptPage(deps, req));
}
