// Proves receipts and signed ledger proofs through the gateway, black box: the spec's typical flow up to step 4
// (participant → sandbox checkout → completion → receipt → proof → verify), an outsider's verification from
// the public JSON and the key-free JWKS, counterparty signatures, key rotation with the admin CLI, scopes,
// sandbox/live isolation, and bad input on every field answered with the envelope and a precise error_code.
import { createHash, randomBytes } from "node:crypto";
import { CompactSign, compactVerify, createLocalJWKSet, exportJWK, generateKeyPair, type JSONWebKeySet } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateKeyRingEntry } from "@treasury/service-kit";
import { buildReceipts, type ReceiptsService } from "../../services/receipts/src/service.ts";
import { admin } from "./admin-run.ts";
import { call, startStack, type Stack } from "./stack.ts";

const sealingKeys = generateKeyRingEntry("e2e1");
let s: Stack;
let receipts: ReceiptsService;

beforeAll(async () => {
  s = await startStack({ services: ["ledger", "payments"] });
  receipts = await buildReceipts(s.env.env("receipts", { RECEIPTS_SEALING_KEYS: sealingKeys }));
  await receipts.start();
}, 60_000);
afterAll(async () => {
  await receipts?.stop();
  await s?.stop();
});

type Body = Record<string, unknown>;
const api = (method: string, path: string, body?: unknown, key: string | undefined = s.testKey) =>
  call(s.baseUrl, method, path, { key, ...(body === undefined ? {} : { body }) });

function expectError(r: { status: number; body: Body }, status: number, code: string): void {
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  expect(r.body).toMatchObject({ success: false, error_code: code, request_id: expect.stringMatching(/^req_[0-9a-f]{32}$/) });
  expect(typeof r.body["error"]).toBe("string");
}

let seq = 0;
async function completedCheckout(): Promise<{ id: string; sale: string }> {
  const pid = `rcpt_creator_${++seq}_${randomBytes(3).toString("hex")}`;
  expect((await api("POST", "/v1/participants", { participant_id: pid, display_name: "Ana's Studio", default_split_percent: 80 })).status).toBe(201);
  const created = await api("POST", "/v1/checkout-sessions", { participant_id: pid, amount: 12_345, product_name: "Mixing course" });
  expect(created.status).toBe(201);
  const id = (created.body["checkout_session"] as { id: string }).id;
  const done = await api("POST", `/v1/sandbox/checkouts/${id}/complete`, { idempotency_key: `done-${id}` });
  expect(done.status).toBe(200);
  return { id, sale: (done.body["checkout_session"] as { sale_transaction_id: string }).sale_transaction_id };
}

async function receiptFor(checkoutId: string): Promise<string> {
  const r = await api("POST", "/v1/receipts/generate", { checkout_id: checkoutId });
  expect([200, 201]).toContain(r.status);
  return r.body["receipt_id"] as string;
}

describe("typical flow, step 4", () => {
  it("completes a sandbox checkout, generates its receipt, fetches the proof and verifies it", async () => {
    // Proves the whole path end to end through the gateway, and that an outsider can check the proof.
    const cs = await completedCheckout();
    const gen = await api("POST", "/v1/receipts/generate", { checkout_id: cs.id, order_id: "order-1001" });
    expect(gen.status).toBe(201);
    expect(gen.body).toMatchObject({
      success: true,
      created: true,
      receipt: { status: "issued", checkout_session_id: cs.id, sale_transaction_id: cs.sale, order_id: "order-1001", total_amount: 12_345, currency: "USD" },
    });
    const receiptId = gen.body["receipt_id"] as string;
    expect(gen.body["hosted_url"]).toBe(`${s.altUrl}/v1/receipts/${receiptId}/view`);
    expect((await api("POST", "/v1/receipts/generate", { checkout_id: cs.id })).status).toBe(200);
    const got = await api("GET", `/v1/receipts/${receiptId}`);
    expect(got.status).toBe(200);
    expect(got.body["receipt"]).toEqual(gen.body["receipt"]);

    const proofRes = await api("GET", `/v1/receipts/${receiptId}/proof`);
    expect(proofRes.status).toBe(200);
    const proof = proofRes.body["proof"] as {
      receipt_id: string;
      transaction_id: string;
      canonical_payload: string;
      receipt_hash: string;
      chain: { sequence: number; previous_hash: string; entry_hash: string };
      service_signature: { alg: string; kid: string; jws: string };
    };
    expect(proof).toMatchObject({ receipt_id: receiptId, transaction_id: cs.sale });
    expect((await api("GET", `/v1/receipts/${receiptId}/proof`)).body["proof"]).toEqual(proof);
    expect((await api("GET", `/v1/receipts/proofs/${cs.sale}`)).body["proof"]).toEqual(proof);

    const verified = await api("POST", "/v1/receipts/verify", { receipt_id: receiptId });
    expect(verified.status).toBe(200);
    expect(verified.body).toMatchObject({
      success: true,
      valid: true,
      checks: { receipt_hash: true, chain: true, service_signature: true, counterparty_signatures: [] },
    });

    // The outsider: the JWKS needs no API key; jose and a fresh SHA-256 are all it takes.
    const keys = await call(s.baseUrl, "GET", "/v1/receipts/jwks");
    expect(keys.status).toBe(200);
    const jwks = { keys: keys.body["keys"] } as JSONWebKeySet;
    expect(createHash("sha256").update(proof.canonical_payload).digest("hex")).toBe(proof.receipt_hash);
    const { payload } = await compactVerify(proof.service_signature.jws, createLocalJWKSet(jwks), { algorithms: ["EdDSA"] });
    expect(JSON.parse(new TextDecoder().decode(payload))).toMatchObject({
      receipt_hash: proof.receipt_hash,
      entry_hash: proof.chain.entry_hash,
      sequence: proof.chain.sequence,
    });
    expect(JSON.parse(proof.canonical_payload).transaction.id).toBe(cs.sale);

    const page = await fetch(gen.body["hosted_url"] as string);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain("$123.45");
    expect(html).toContain(proof.receipt_hash);
    expect(html).not.toMatch(/s(l)?k_(test|live)_/);
  });
});

describe("counterparty signatures and verification", () => {
  it("stores a verified ES256 signature once and verifies a bare hash with a key", async () => {
    // Proves 201, 409 for the same key_id, 400 for a forged signature, and the hash + signature + JWK form of verify.
    const cs = await completedCheckout();
    const receiptId = await receiptFor(cs.id);
    const hash = ((await api("GET", `/v1/receipts/${receiptId}/proof`)).body["proof"] as { receipt_hash: string }).receipt_hash;
    const { publicKey, privateKey } = await generateKeyPair("ES256", { extractable: true });
    const jwk = await exportJWK(publicKey);
    const signature = await new CompactSign(new TextEncoder().encode(hash)).setProtectedHeader({ alg: "ES256" }).sign(privateKey);
    const body = { key_id: "platform-key-1", signature, public_key_jwk: jwk, signer_type: "platform", signer_id: "marketplace", signed_payload: hash };
    const first = await api("POST", `/v1/receipts/${receiptId}/proof/signatures`, body);
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ success: true, signature: { key_id: "platform-key-1", alg: "ES256" } });
    expectError(await api("POST", `/v1/receipts/${receiptId}/proof/signatures`, body), 409, "duplicate_signature");
    const forged = await new CompactSign(new TextEncoder().encode(hash)).setProtectedHeader({ alg: "ES256" }).sign((await generateKeyPair("ES256")).privateKey);
    expectError(await api("POST", `/v1/receipts/${receiptId}/proof/signatures`, { ...body, key_id: "k2", signature: forged }), 400, "invalid_signature");
    const v = await api("POST", "/v1/receipts/verify", { receipt_hash: hash, signature, public_key_jwk: jwk });
    expect(v.body).toMatchObject({
      valid: true,
      checks: {
        counterparty_signatures: [
          { key_id: "platform-key-1", valid: true },
          { key_id: "provided", valid: true },
        ],
      },
    });
  });
});

describe("key rotation with the admin CLI", () => {
  it("signs new proofs with the new key while old proofs still verify", async () => {
    // Proves `admin receipts rotate-key` answered by the receipts service: JSON out, and the JWKS keeps the old key.
    const before = await receiptFor((await completedCheckout()).id);
    const oldKid = ((await api("GET", `/v1/receipts/${before}/proof`)).body["proof"] as { service_signature: { kid: string } }).service_signature.kid;
    // The receipts service holds its sealing keys: the operator's CLI needs none.
    const done = await admin(s.env, "receipts", "rotate-key", "--reason", "yearly rotation");
    expect(done.code, JSON.stringify(done.err)).toBe(0);
    const rotated = done.out as { kid: string; retired_kids: string[] };
    expect(rotated.retired_kids).toEqual([oldKid]);
    const after = await receiptFor((await completedCheckout()).id);
    expect(((await api("GET", `/v1/receipts/${after}/proof`)).body["proof"] as { service_signature: { kid: string } }).service_signature.kid).toBe(rotated.kid);
    const kids = ((await call(s.baseUrl, "GET", "/v1/receipts/jwks")).body["keys"] as Array<{ kid: string }>).map((k) => k.kid);
    expect(kids).toEqual([rotated.kid, oldKid]);
    for (const id of [before, after]) expect((await api("POST", "/v1/receipts/verify", { receipt_id: id })).body["valid"]).toBe(true);
  });
});

describe("scopes, isolation and bad input", () => {
  it("needs the payments scope to generate and sign, read to fetch and verify; the JWKS needs no key", async () => {
    // Proves the route table's scopes through the gateway.
    const cs = await completedCheckout();
    const receiptId = await receiptFor(cs.id);
    const readOnly = (await s.key({ scopes: ["read"] })).api_key;
    expectError(await api("POST", "/v1/receipts/generate", { checkout_id: cs.id }, readOnly), 403, "insufficient_scope");
    expectError(
      await api("POST", `/v1/receipts/${receiptId}/proof/signatures`, { key_id: "k", signature: "a.b.c", public_key_jwk: {} }, readOnly),
      403,
      "insufficient_scope",
    );
    expect((await api("GET", `/v1/receipts/${receiptId}/proof`, undefined, readOnly)).status).toBe(200);
    expect((await api("POST", "/v1/receipts/verify", { receipt_id: receiptId }, readOnly)).status).toBe(200);
    expectError(await call(s.baseUrl, "GET", `/v1/receipts/${receiptId}`), 401, "missing_api_key");
    expect((await call(s.baseUrl, "GET", "/v1/receipts/jwks")).status).toBe(200);
  });

  it("a live key sees no sandbox receipt, proof or sale", async () => {
    // Proves sandbox and live isolation: every lookup from the other environment is a 404.
    const cs = await completedCheckout();
    const receiptId = await receiptFor(cs.id);
    const live = s.liveKey;
    expectError(await api("GET", `/v1/receipts/${receiptId}`, undefined, live), 404, "receipt_not_found");
    expectError(await api("GET", `/v1/receipts/${receiptId}/proof`, undefined, live), 404, "receipt_not_found");
    expectError(await api("GET", `/v1/receipts/proofs/${cs.sale}`, undefined, live), 404, "transaction_not_found");
    expectError(await api("POST", "/v1/receipts/verify", { receipt_id: receiptId }, live), 404, "receipt_not_found");
    expectError(await api("POST", "/v1/receipts/generate", { checkout_id: cs.id }, live), 404, "checkout_session_not_found");
    expectError(await api("POST", "/v1/receipts/generate", { sale_transaction_id: cs.sale }, live), 404, "transaction_not_found");
    expectError(
      await api(
        "POST",
        `/v1/receipts/${receiptId}/proof/signatures`,
        { key_id: "k", signature: "a.b.c", public_key_jwk: { kty: "OKP", crv: "Ed25519", x: "A".repeat(43) } },
        live,
      ),
      404,
      "receipt_not_found",
    );
  });

  it("bad input on every field is an envelope with a precise error_code, and stores nothing", async () => {
    // Proves the gateway's and the service's validation together: 400/404/409, never a 5xx, no new rows.
    const cs = await completedCheckout();
    const receiptId = await receiptFor(cs.id);
    const count = async () => {
      const [r] = await s.env.adminSql<
        { receipts: string; signatures: string }[]
      >`select (select count(*) from receipts.receipts) as receipts, (select count(*) from receipts.proof_signatures) as signatures`;
      return r;
    };
    const before = await count();
    const cases: Array<[string, string, unknown, number, string]> = [
      ["POST", "/v1/receipts/generate", {}, 400, "validation_error"],
      ["POST", "/v1/receipts/generate", { checkout_id: "nope" }, 400, "validation_error"],
      ["POST", "/v1/receipts/generate", { sale_transaction_id: 12 }, 400, "validation_error"],
      ["POST", "/v1/receipts/generate", { checkout_id: cs.id, order_id: ["x"] }, 400, "validation_error"],
      ["POST", "/v1/receipts/generate", { checkout_id: cs.id, external_order_id: "" }, 400, "validation_error"],
      ["POST", "/v1/receipts/generate", { checkout_id: cs.id, metadata: [1] }, 400, "validation_error"],
      ["POST", "/v1/receipts/generate", { checkout_id: "00000000-0000-4000-8000-000000000000" }, 404, "checkout_session_not_found"],
      ["POST", "/v1/receipts/generate", { sale_transaction_id: "txn_unknown0000000000000000" }, 404, "transaction_not_found"],
      ["POST", "/v1/receipts/generate", { checkout_id: cs.id, order_id: "other-labels" }, 409, "idempotency_conflict"],
      ["GET", "/v1/receipts/rcpt_unknown00000000000000000", undefined, 404, "receipt_not_found"],
      ["GET", "/v1/receipts/rcpt_unknown00000000000000000/proof", undefined, 404, "receipt_not_found"],
      ["GET", "/v1/receipts/proofs/txn_unknown0000000000000000", undefined, 404, "transaction_not_found"],
      ["GET", "/v1/receipts/proofs/not-a-txn", undefined, 404, "transaction_not_found"],
      ["POST", `/v1/receipts/${receiptId}/proof/signatures`, {}, 400, "validation_error"],
      ["POST", `/v1/receipts/${receiptId}/proof/signatures`, { key_id: "k", signature: "x", public_key_jwk: {} }, 400, "validation_error"],
      ["POST", `/v1/receipts/${receiptId}/proof/signatures`, { key_id: "k", signature: "a.b.c", public_key_jwk: [] }, 400, "validation_error"],
      ["POST", `/v1/receipts/${receiptId}/proof/signatures`, { key_id: "k", signature: "a.b.c", public_key_jwk: { kty: "RSA" } }, 400, "invalid_public_key"],
      [
        "POST",
        `/v1/receipts/${receiptId}/proof/signatures`,
        { key_id: "k", signature: "a.b.c", public_key_jwk: { kty: "OKP", crv: "Ed25519", x: "A".repeat(43) }, signed_payload: "x" },
        400,
        "signed_payload_mismatch",
      ],
      [
        "POST",
        `/v1/receipts/${receiptId}/proof/signatures`,
        { key_id: "k", signature: "a.b.c", public_key_jwk: { kty: "OKP", crv: "Ed25519", x: "A".repeat(43) } },
        400,
        "invalid_signature",
      ],
      [
        "POST",
        `/v1/receipts/${receiptId}/proof/signatures`,
        { key_id: "k", signature: "a.b.c", public_key_jwk: { kty: "OKP", crv: "Ed25519", x: "A".repeat(43) }, signer_type: "buyer" },
        400,
        "validation_error",
      ],
      [
        "POST",
        "/v1/receipts/rcpt_unknown00000000000000000/proof/signatures",
        { key_id: "k", signature: "a.b.c", public_key_jwk: { kty: "OKP", crv: "Ed25519", x: "A".repeat(43) } },
        404,
        "receipt_not_found",
      ],
      ["POST", "/v1/receipts/verify", {}, 400, "validation_error"],
      ["POST", "/v1/receipts/verify", { receipt_hash: "abc" }, 400, "validation_error"],
      ["POST", "/v1/receipts/verify", { receipt_id: 5 }, 400, "validation_error"],
      ["POST", "/v1/receipts/verify", { receipt_hash: "a".repeat(64), public_key_jwk: { kty: "OKP" } }, 400, "validation_error"],
      ["POST", "/v1/receipts/verify", { receipt_hash: "a".repeat(64), signature: "a.b.c", public_key_jwk: { kty: "OKP" } }, 400, "invalid_public_key"],
      ["POST", "/v1/receipts/verify", { receipt_id: "rcpt_unknown00000000000000000" }, 404, "receipt_not_found"],
    ];
    for (const [method, path, body, status, code] of cases) {
      const r = await api(method, path, body);
      expect([r.status, r.body["error_code"]], `${method} ${path} ${JSON.stringify(body)}`).toEqual([status, code]);
      expectError(r, status, code);
    }
    const raw = await call(s.baseUrl, "POST", "/v1/receipts/generate", { key: s.testKey, rawBody: "{", headers: { "content-type": "application/json" } });
    expectError(raw, 400, "invalid_json");
    expect(await count()).toEqual(before);
  });
});

describe("chain audit with the admin CLI", () => {
  // Last in the file: it breaks this org's sandbox chain on purpose.
  it("reports every chain whole, then the one a removed proof broke, and verification follows the audit", async () => {
    // Proves `admin receipts audit-chains`: JSON out, exit 1 on a broken chain, and its finding reaches POST /v1/receipts/verify.
    const receiptId = await receiptFor((await completedCheckout()).id);
    await receiptFor((await completedCheckout()).id);
    const cli = () => admin(s.env, "receipts", "audit-chains");
    const whole = (await cli()).out as { chains: number; broken: unknown[] };
    expect(whole.chains).toBeGreaterThanOrEqual(1);
    expect(whole.broken).toEqual([]);
    await s.env.adminSql.begin(async (tx) => {
      await tx`alter table receipts.proofs disable trigger proofs_append_only`;
      await tx`delete from receipts.proofs where org_id = ${s.orgId} and livemode = false and sequence = 1`;
      await tx`alter table receipts.proofs enable trigger proofs_append_only`;
    });
    const failed = await cli();
    expect(failed.code).toBe(1);
    const report = failed.out as { broken: Array<{ org_id: string; problems: string[] }> };
    expect(report.broken.map((b) => b.org_id)).toContain(s.orgId);
    const verified = await api("POST", "/v1/receipts/verify", { receipt_id: receiptId });
    expect(verified.body).toMatchObject({ valid: false, checks: { chain: false } });
    expect((verified.body["problems"] as string[]).join("\n")).toMatch(/full audit of .*sequence 1 is missing/);
  });
});
