// Proves a TIN never reaches a log: gateway, ledger and tax run as real processes at the most verbose log level,
// W-9 profiles (accepted and refused), calculations, generation, the PDF copy and the FIRE export (which carries
// the full TIN) go through the gateway, and every line each process printed is searched for every TIN sent.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKey, createOrg } from "../../services/gateway/src/admin.ts";
import { call } from "./stack.ts";
import { ledgerPoster } from "./tax-support.ts";
import { startTracedStack, type TracedStack } from "./traced-stack.ts";

let stack: TracedStack;
let baseUrl = "";
let key = "";
let orgId = "";

/** Distinctive TINs (accepted and refused), each found if any process printed it, with or without dashes. */
const TINS = ["583-61-7294", "87-4129563", "921-69-6408", "000-44-8812", "07-9913377", "4417-2"];

beforeAll(async () => {
  stack = await startTracedStack("tax");
  baseUrl = stack.baseUrl;
  orgId = (await createOrg(stack.env.adminSql, { name: "TIN Log Check" })).org_id;
  key = (await createApiKey(stack.env.adminSql, { orgId, environment: "sandbox", scopes: null })).api_key;
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

const w9 = (tinType: string, tin: string) => ({
  legal_name: "Tin Logcheck",
  tin_type: tinType,
  tin,
  address: { line1: "1 Ledger Lane", city: "Boston", state: "MA", postal_code: "02110" },
  certified: true,
});

describe("TINs in logs", () => {
  it("no process logs a TIN, whatever happens to the request", { timeout: 120_000 }, async () => {
    // Proves the log hygiene of every path a TIN takes at LOG_LEVEL=trace: accepted, refused by rule and by format, exported.
    const api = (method: string, path: string, body?: unknown) => call(baseUrl, method, path, { key, ...(body !== undefined ? { body } : {}) });
    for (const id of ["tin_a", "tin_b"]) expect((await api("POST", "/v1/participants", { participant_id: id })).status).toBe(201);
    expect((await api("PUT", "/v1/participants/tin_a/tax-profile", w9("ssn", TINS[0] ?? ""))).status).toBe(201);
    expect((await api("PUT", "/v1/participants/tin_b/tax-profile", w9("ein", TINS[1] ?? ""))).status).toBe(201);
    expect((await api("PUT", "/v1/participants/tin_a/tax-profile", w9("itin", TINS[2] ?? ""))).status).toBe(400);
    expect((await api("PUT", "/v1/participants/tin_a/tax-profile", w9("ssn", TINS[3] ?? ""))).status).toBe(400);
    expect((await api("PUT", "/v1/participants/tin_b/tax-profile", w9("ein", TINS[4] ?? ""))).status).toBe(400);
    expect((await api("PUT", "/v1/participants/tin_b/tax-profile", w9("ein", TINS[5] ?? ""))).status).toBe(400);
    expect((await api("PUT", "/v1/participants/nobody/tax-profile", w9("ssn", TINS[0] ?? ""))).status).toBe(404);
    const poster = ledgerPoster(await stack.env.nats(), stack.env.prefix, orgId);
    for (const [who, n] of [
      ["tin_a", 3],
      ["tin_b", 4],
    ] as const) {
      for (let i = 0; i < n; i++) await poster.sale(who, `${who}-${i}`, 40_000, `2025-0${i + 1}-10`);
    }
    expect((await api("PUT", "/v1/tax/settings", { tax_year: 2025, form: "1099-K", threshold_cents: 1, threshold_transactions: 1 })).status).toBe(200);
    const gen = await api("POST", "/v1/tax/documents/generate", { tax_year: 2025 });
    expect(gen.body["generation"]).toMatchObject({ created: 2 });
    const docs = (await api("GET", "/v1/tax/documents?tax_year=2025")).body["tax_documents"] as { id: string }[];
    for (const d of docs) expect((await fetch(`${baseUrl}/v1/tax/documents/${d.id}/pdf`, { headers: { "x-api-key": key } })).status).toBe(200);
    const fire = await (await fetch(`${baseUrl}/v1/tax/documents/export?tax_year=2025&format=fire`, { headers: { "x-api-key": key } })).text();
    // The FIRE file itself carries the full TINs (it goes to the IRS): the export path really handled them.
    expect(fire).toContain("583617294");
    expect(fire).toContain("874129563");

    const lines = await stack.stopAndReadLogs();
    // The logs are really verbose (trace): the requests are in them, so a silent logger cannot pass.
    expect(lines.some((l) => l.includes("/v1/participants/:participant_id/tax-profile"))).toBe(true);
    expect(lines.some((l) => l.includes("/v1/tax/documents/export"))).toBe(true);
    for (const tin of TINS) {
      for (const form of new Set([tin, tin.replace(/-/g, "")])) {
        expect(
          lines.filter((l) => l.includes(form)),
          `${form} appears in the logs`,
        ).toEqual([]);
      }
    }
  });
});
