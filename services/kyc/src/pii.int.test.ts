// Proves personal data is sealed at rest (AES-256-GCM, bound to its row), keys rotate without losing old rows,
// and a service without keys refuses to store personal data rather than storing it in the clear.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, parseKeyRing, Sealer, SealedValueError } from "@treasury/service-kit";
import { piiContext } from "./usecases/deps.ts";
import { buildKyc } from "./service.ts";
import { authFor, businessBody, creatorBody, err, newOrg, ok, startKyc, testKeyRing, type KycHarness } from "./test-support.ts";

const PII = [
  "Ada Quill Lovelace",
  "ada.quill@example.com",
  "1990-12-10",
  "12 Analytical Row",
  "NW1 6XE",
  "Quill Works LLC",
  "Grace Quill",
  "grace@quill.example",
  "555-0134",
  "500 Market St",
  "1985-03-14",
  "passport",
];

describe("sealed at rest", () => {
  let h: KycHarness;
  const keys = testKeyRing("k1");
  beforeAll(async () => {
    h = await startKyc({ ring: keys.ring });
  });
  afterAll(async () => {
    await h?.close();
  });

  it("no table of the kyc schema holds personal data in the clear; the sealer opens it for its own row only", async () => {
    // Proves the storage format: every kyc row as text is free of the submitted PII, and the sealed bundle is bound to its id.
    const auth = authFor(newOrg());
    h.addParticipant(auth, "c1");
    ok(await h.call(h.svc, "submitCreatorVerification", auth, { params: { participant_id: "c1" }, body: creatorBody() }));
    ok(await h.call(h.svc, "submitBusinessVerification", auth, { body: businessBody() }));
    const tables = await h.env.adminSql<{ t: string }[]>`select table_name as t from information_schema.tables where table_schema = 'kyc'`;
    for (const { t } of tables) {
      const rows = await h.env.adminSql.unsafe<{ r: string }[]>(`select t::text as r from kyc."${t}" t`);
      const text = rows.map((r) => r.r).join("\n");
      for (const value of PII) expect(text, `${t} holds ${value}`).not.toContain(value);
    }
    const subs = await h.env.adminSql<
      { id: string; pii: string; pii_key_id: string; subject: string }[]
    >`select id, pii, pii_key_id, subject from kyc.submissions where org_id = ${auth.org_id} order by subject`;
    expect(subs.map((s) => s.pii_key_id)).toEqual(["k1", "k1"]);
    const sealer = new Sealer(keys.ring);
    const [business, creator] = subs;
    expect(sealer.openJson(creator!.pii, piiContext(creator!.id))).toMatchObject({
      legal_name: "Ada Quill Lovelace",
      email: "ada.quill@example.com",
      date_of_birth: "1990-12-10",
      address: { line1: "12 Analytical Row" },
    });
    expect(sealer.openJson(business!.pii, piiContext(business!.id))).toMatchObject({
      legal_name: "Quill Works LLC",
      primary_contact: { phone: "+1 (415) 555-0134" },
      beneficial_owners: [{ date_of_birth: "1985-03-14" }],
    });
    // A sealed bundle copied onto another row does not open there.
    expect(() => sealer.open(creator!.pii, piiContext(business!.id))).toThrow(SealedValueError);
  });
});

describe("key rotation", () => {
  let h: KycHarness;
  const k1 = testKeyRing("k1");
  beforeAll(async () => {
    h = await startKyc({ ring: k1.ring });
  });
  afterAll(async () => {
    await h?.close();
  });

  it("a new active key seals new rows, old rows still open, the re-seal moves them, then the old key can go", async () => {
    // Proves rotation through PII_KEYS / PII_ACTIVE_KEY_ID: k1 rows readable under {k1,k2}, re-sealed to k2, readable under {k2} alone.
    const auth = authFor(newOrg());
    h.addParticipant(auth, "c1");
    ok(await h.call(h.svc, "submitCreatorVerification", auth, { params: { participant_id: "c1" }, body: creatorBody({ submit_for_review: false }) }));
    await h.svc.stop();

    const k2 = testKeyRing("k2");
    const both = `${k1.spec},${k2.spec}`;
    const rotated = await h.another({ PII_KEYS: both, PII_ACTIVE_KEY_ID: "k2", KYC_RESEAL_INTERVAL_MS: "0" });
    ok(
      await h.call(rotated, "submitCreatorVerification", auth, {
        params: { participant_id: "c1" },
        body: creatorBody({ submit_for_review: false, legal_name: "Ada Second" }),
      }),
    );
    const keysOf = async () =>
      (await h.env.adminSql<{ k: string }[]>`select pii_key_id as k from kyc.submissions where org_id = ${auth.org_id} order by created_at`).map((r) => r.k);
    expect(await keysOf()).toEqual(["k1", "k2"]);
    const ring = parseKeyRing(both, "k2");
    const rows = async () =>
      h.env.adminSql<{ id: string; pii: string }[]>`select id, pii from kyc.submissions where org_id = ${auth.org_id} order by created_at`;
    for (const r of await rows()) expect(new Sealer(ring).openJson<{ email: string }>(r.pii, piiContext(r.id)).email).toBe("ada.quill@example.com");

    expect(await rotated.reseal()).toBe(1);
    expect(await keysOf()).toEqual(["k2", "k2"]);
    expect(await rotated.reseal()).toBe(0);
    const onlyK2 = new Sealer(k2.ring);
    expect((await rows()).map((r) => onlyK2.openJson<{ legal_name: string }>(r.pii, piiContext(r.id)).legal_name)).toEqual([
      "Ada Quill Lovelace",
      "Ada Second",
    ]);
    const onlyK1 = new Sealer(k1.ring);
    for (const r of await rows()) expect(() => onlyK1.open(r.pii, piiContext(r.id))).toThrow(SealedValueError);
  });

  it("refuses a bad key ring at startup without printing key material", async () => {
    // Proves PII_KEYS problems are configuration errors naming the problem only.
    const key = k1.spec.split(":")[1]!;
    for (const [keysSpec, active] of [
      [`k1:${key.slice(0, 20)}`, undefined],
      [`${k1.spec},${testKeyRing("k2").spec}`, undefined],
      [k1.spec, "k9"],
    ] as const) {
      const e = await buildKyc(h.env.env("kyc", { PII_KEYS: keysSpec, ...(active !== undefined ? { PII_ACTIVE_KEY_ID: active } : {}) })).catch(
        (x: unknown) => x,
      );
      expect(e).toBeInstanceOf(ConfigError);
      expect(String(e)).toContain("PII_KEYS");
      expect(String(e)).not.toContain(key.slice(0, 20));
    }
  });
});

describe("without PII keys", () => {
  let h: KycHarness;
  beforeAll(async () => {
    h = await startKyc({ ring: null });
  });
  afterAll(async () => {
    await h?.close();
  });

  it("refuses submissions with 503 service_unavailable, stores nothing, still answers reads, and reports not ready", async () => {
    // Proves a missing secret never leads to personal data stored in the clear, and that readiness shows it.
    const auth = authFor(newOrg());
    h.addParticipant(auth, "c1");
    const e = err(await h.call(h.svc, "submitCreatorVerification", auth, { params: { participant_id: "c1" }, body: creatorBody() }));
    expect(e.code).toBe("service_unavailable");
    expect(e.message).toContain("PII_KEYS");
    expect(err(await h.call(h.svc, "submitBusinessVerification", auth, { body: businessBody() })).code).toBe("service_unavailable");
    expect((await h.env.adminSql`select count(*)::int as n from kyc.submissions`)[0]?.n).toBe(0);
    expect(ok(await h.call(h.svc, "getBusinessVerification", auth)).body["business_kyb"]).toMatchObject({ status: "pending" });
    await expect(Promise.all(h.svc.readyChecks.map((c) => c()))).rejects.toThrow(/PII_KEYS/);
  });
});
