/**
 * Tax benchmark: BENCH_TAX_PARTICIPANTS (default 50,000) creators, each with a year of sales (BENCH_TAX_SALES a
 * year, default 12, one a month, with their accounting dates in the tax year) and one refund in ten, posted through
 * the ledger's group-committed `svc.ledger.post` (the ledger its own process, durable PostgreSQL); a W-9 profile each
 * with its TIN sealed. Then, in this process, the tax service built as deployed (its own role and pool, the ledger
 * over NATS): the year's generation (documents/s), generating again (idempotent: nothing written), and the FIRE and
 * CSV exports streamed to files (size, time), with this process's memory sampled throughout. Beside it, pgbench
 * TPC-B on the same cluster in the same run (bench/lib.ts). Then a cross-check: one document per creator, the FIRE
 * file's record count and its C record's total equal to the ledger's gross, and the ledger's invariants. Last line:
 * one JSON object.
 *
 *   BENCH_TAX_PARTICIPANTS, BENCH_TAX_SALES, BENCH_SEED_CONCURRENCY (default 256), BENCH_TAX_PAGE (the generation
 *   page, default the service's 1,000).
 *   Targets (issue 35): generation ≥ 2,000 documents/s; the year's FIRE export under 30 s; memory flat (streamed).
 */
import { createWriteStream, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { once } from "node:events";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { newRequestId, rpcSubject, type Tenant } from "@treasury/contracts";
import { generateKeyRingEntry, LedgerOutcomeUnknown, natsLedgerPort, rpcCall, serviceDatabaseUrl, type LedgerPort } from "@treasury/service-kit";
import { freePort } from "@treasury/testing";
import { createOrg } from "../services/gateway/src/admin.ts";
import { checkInvariants } from "../services/ledger/src/verify/invariants.ts";
import { buildTax, type TaxService } from "../services/tax/src/service.ts";
import { exportDocuments } from "../services/tax/src/usecases/export.ts";
import { generateDocuments } from "../services/tax/src/usecases/generate.ts";
import { tinAad } from "../services/tax/src/usecases/profiles.ts";
import { adminSql, pgbenchBaseline, pgbenchLine, pgbenchRunner, startInfra } from "./lib.ts";
import { LEDGER_NODE_OPTIONS, startChild, type Child } from "./lib/processes.ts";

const PARTICIPANTS = Number(process.env.BENCH_TAX_PARTICIPANTS ?? 50_000);
const SALES = Number(process.env.BENCH_TAX_SALES ?? 12);
const CONCURRENCY = Number(process.env.BENCH_SEED_CONCURRENCY ?? 256);
const YEAR = 2025;
const SALE_CENTS = 20_000;
const REFUND_CENTS = 1_500;

/** `count` operations `op(i)`, `concurrency` at a time; throws the first failure. */
async function each(count: number, concurrency: number, op: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await op(next++);
    }),
  );
}

/** A post retried while its outcome is unknown: its reference makes a second try the same movement, never another. */
async function postSure(ledger: LedgerPort, req: Parameters<LedgerPort["post"]>[0]): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await ledger.post(req);
      return;
    } catch (e) {
      if (!(e instanceof LedgerOutcomeUnknown) || attempt >= 20) throw e;
      await new Promise((r) => setTimeout(r, 50 * (attempt + 1)));
    }
  }
}

const idOf = (i: number) => `tax_${String(i).padStart(6, "0")}`;
const seconds = (t0: number) => (performance.now() - t0) / 1000;

/** Memory of this process (MiB) sampled every 100 ms while `run` runs: where it started, its peak, where it ended. */
async function sampled<T>(run: () => Promise<T>): Promise<{ value: T; rss: { start: number; peak: number; end: number }; heapPeak: number }> {
  const mib = (n: number) => Math.round(n / 1_048_576);
  const start = process.memoryUsage();
  let peak = start.rss;
  let heapPeak = start.heapUsed;
  const timer = setInterval(() => {
    const m = process.memoryUsage();
    peak = Math.max(peak, m.rss);
    heapPeak = Math.max(heapPeak, m.heapUsed);
  }, 100);
  try {
    const value = await run();
    return { value, rss: { start: mib(start.rss), peak: mib(peak), end: mib(process.memoryUsage().rss) }, heapPeak: mib(heapPeak) };
  } finally {
    clearInterval(timer);
  }
}

/** Participants through the ledger's own operation (as the gateway would send it), then their sales and refunds. */
async function seedLedger(tax: TaxService, ledger: LedgerPort, tenant: Tenant): Promise<number> {
  const auth = { org_id: tenant.orgId, livemode: tenant.livemode, key_id: "bench", scopes: null, request_id: newRequestId() };
  const t0 = performance.now();
  await each(PARTICIPANTS, 64, async (i) => {
    const payload = { auth, params: {}, query: {}, body: { participant_id: idOf(i) }, deadline: Date.now() + 60_000 };
    const r = await rpcCall(tax.nc, rpcSubject("", "ledger", "createParticipant"), payload, { timeoutMs: 60_000 });
    if (!r.ok) throw new Error(`participant ${idOf(i)}: ${JSON.stringify(r.error)}`);
  });
  console.log(`seed: ${PARTICIPANTS} participants in ${seconds(t0).toFixed(1)} s`);
  const t1 = performance.now();
  await each(PARTICIPANTS * SALES, CONCURRENCY, async (k) => {
    const p = idOf(k % PARTICIPANTS);
    const m = Math.floor(k / PARTICIPANTS) % 12;
    const ref = `${p}_s${Math.floor(k / PARTICIPANTS)}`;
    const creator = (SALE_CENTS * 80) / 100;
    await postSure(ledger, {
      org_id: tenant.orgId,
      livemode: tenant.livemode,
      kind: "sale",
      reference_id: ref,
      postings: [
        { debit: { system: "platform_cash" }, credit: { participant_id: p }, amount: creator },
        { debit: { system: "platform_cash" }, credit: { system: "platform_revenue" }, amount: SALE_CENTS - creator },
      ],
      sale: { sale_reference: ref, participant_id: p, gross: SALE_CENTS, creator_amount: creator, platform_amount: SALE_CENTS - creator },
      effective_date: `${YEAR}-${String(m + 1).padStart(2, "0")}-${String(1 + (k % 28)).padStart(2, "0")}T12:00:00Z`,
    });
  });
  const refunds = Math.floor(PARTICIPANTS / 10);
  await each(refunds, CONCURRENCY, async (j) => {
    const sale = `${idOf(j * 10)}_s0`;
    await postSure(ledger, {
      org_id: tenant.orgId,
      livemode: tenant.livemode,
      kind: "refund",
      reference_id: `refund:${sale}`,
      refund: { sale_reference: sale, amount: REFUND_CENTS },
      effective_date: `${YEAR}-06-30`,
    });
  });
  const posts = PARTICIPANTS * SALES + refunds;
  console.log(`seed: ${posts} sales and refunds posted in ${seconds(t1).toFixed(1)} s = ${(posts / seconds(t1)).toFixed(0)} posts/s`);
  return refunds;
}

/** W-9 profiles with sealed TINs, a thousand per statement (a seed: the API's path is proven by the e2e tests). */
async function seedProfiles(tax: TaxService, tenant: Tenant): Promise<void> {
  const sealer = tax.deps.sealer;
  if (sealer === undefined) throw new Error("the tax service has no key ring");
  for (let from = 0; from < PARTICIPANTS; from += 1_000) {
    const rows = Array.from({ length: Math.min(1_000, PARTICIPANTS - from) }, (_, j) => {
      const p = idOf(from + j);
      const tin = `4${String(from + j).padStart(8, "0")}`;
      return {
        participant_id: p,
        tin_sealed: sealer.seal(tin, tinAad(tenant, p)),
        tin_last4: tin.slice(5),
        address: { line1: `${from + j} Ledger Lane`, city: "Denver", state: "CO", postal_code: "80202", country: "US" },
      };
    });
    await tax.sql`
      insert into tax.profiles (org_id, livemode, participant_id, legal_name, tin_type, tin_sealed, tin_last4, address, certified_at, certified_by)
      select ${tenant.orgId}, ${tenant.livemode}, x.participant_id, 'Creator ' || x.participant_id, 'ssn', x.tin_sealed, x.tin_last4, x.address, now(), 'bench'
      from jsonb_to_recordset(${tax.sql.json(rows)}) as x(participant_id text, tin_sealed text, tin_last4 text, address jsonb)`;
  }
}

/** Streams one export to a file; answers its size and seconds. */
async function exportTo(tax: TaxService, tenant: Tenant, format: "fire" | "csv", file: string): Promise<{ bytes: number; seconds: number }> {
  const t0 = performance.now();
  const out = createWriteStream(file);
  for await (const chunk of exportDocuments(tax.deps, tenant, YEAR, format)) {
    if (!out.write(chunk)) await once(out, "drain");
  }
  out.end();
  await once(out, "finish");
  return { bytes: statSync(file).size, seconds: seconds(t0) };
}

/** The FIRE file read back: its records by type, every one 750 bytes, and the first C record's payee count and amount 1 total. */
function fireCheck(file: string): { records: Record<string, number>; cPayees: number; cTotal: number; lengthsOk: boolean } {
  const text = readFileSync(file, "latin1");
  const records: Record<string, number> = {};
  let cPayees = 0;
  let cTotal = 0;
  for (let i = 0; i < text.length; i += 750) {
    const type = text[i] ?? "?";
    records[type] = (records[type] ?? 0) + 1;
    if (type === "C") {
      cPayees += Number(text.slice(i + 1, i + 9));
      cTotal += Number(text.slice(i + 15, i + 33));
    }
  }
  return { records, cPayees, cTotal, lengthsOk: text.length % 750 === 0 && text.slice(748, 750) === "\r\n" };
}

const infra = await startInfra();
const children: Child[] = [];
const scratch = mkdtempSync(join(tmpdir(), "tax-bench-"));
let tax: TaxService | undefined;
try {
  const sql = adminSql(infra.adminUrl);
  const { org_id } = await createOrg(sql, { name: "tax-bench" });
  const tenant: Tenant = { orgId: org_id, livemode: false };
  const common = { NATS_URL: infra.natsUrl, NATS_PREFIX: "", DB_POOL_MAX: "20", LOG_LEVEL: "warn" };
  const health = await freePort();
  const ledgerEnv = {
    ...common,
    DATABASE_URL: serviceDatabaseUrl(infra.adminUrl, "ledger"),
    HEALTH_PORT: String(health),
    NODE_OPTIONS: LEDGER_NODE_OPTIONS,
    RPC_CONCURRENCY_MAX: "4096",
  };
  children.push(await startChild("services/ledger/src/main.ts", ledgerEnv, `http://127.0.0.1:${health}/readyz`));
  const page = process.env.BENCH_TAX_PAGE;
  tax = await buildTax({
    ...common,
    DB_POOL_MAX: "8",
    DATABASE_URL: serviceDatabaseUrl(infra.adminUrl, "tax"),
    HEALTH_PORT: String(await freePort()),
    PII_KEYS: generateKeyRingEntry("benchtin"),
    ...(page === undefined ? {} : { TAX_GENERATE_PAGE_SIZE: page }),
  });
  const ledger = natsLedgerPort(tax.nc, "", { caller: "bench", timeoutMs: 60_000 });
  const refunds = await seedLedger(tax, ledger, tenant);
  await seedProfiles(tax, tenant);
  await tax.deps.settings.put(tenant, { taxYear: YEAR, form: "1099-K", thresholdCents: 100_000, thresholdTransactions: SALES - 1, custom: true });

  const baseline = await pgbenchBaseline(pgbenchRunner(infra.adminUrl), { levels: [1, 4, 16, 32], seconds: 10 });
  console.log(pgbenchLine(baseline));

  // Where generation's time goes: the use case's ports timed as it calls them (they overlap: the next page is read while one is written).
  const spent = { ledger_ms: 0, profiles_ms: 0, write_ms: 0 };
  const timed =
    <A extends unknown[], R>(key: keyof typeof spent, f: (...a: A) => Promise<R>) =>
    async (...a: A): Promise<R> => {
      const t = performance.now();
      try {
        return await f(...a);
      } finally {
        spent[key] += performance.now() - t;
      }
    };
  const d = tax.deps;
  const genDeps = {
    ...d,
    ledger: { ...d.ledger, figures: timed("ledger_ms", d.ledger.figures.bind(d.ledger)) },
    profiles: { ...d.profiles, many: timed("profiles_ms", d.profiles.many.bind(d.profiles)) },
    documents: { ...d.documents, writeDrafts: timed("write_ms", d.documents.writeDrafts.bind(d.documents)) },
  };
  const t0 = performance.now();
  const gen = await sampled(() => generateDocuments(genDeps, tenant, YEAR));
  const genSec = seconds(t0);
  const t1 = performance.now();
  const again = await generateDocuments(tax.deps, tenant, YEAR);
  const againSec = seconds(t1);
  const fire = await sampled(() => exportTo(tax!, tenant, "fire", join(scratch, "tax.fire")));
  const csv = await exportTo(tax, tenant, "csv", join(scratch, "tax.csv"));
  const read = fireCheck(join(scratch, "tax.fire"));
  const tps = (await baseline.again()).tps;

  const [ledgerGross] = await sql<{ gross: string }[]>`select coalesce(sum(gross), 0)::text as gross from ledger.sales where org_id = ${org_id}`;
  const report = await checkInvariants(sql, {});
  const docsPerSec = gen.value.created / genSec;
  const checks = {
    one_document_each: gen.value.created === PARTICIPANTS && again.created === 0 && again.unchanged === PARTICIPANTS,
    fire_records: read.lengthsOk && read.records["B"] === PARTICIPANTS && read.cPayees === PARTICIPANTS,
    fire_total_equals_ledger: read.cTotal === Number(ledgerGross?.gross),
    invariants_ok: report.ok,
  };
  console.log(
    `generation: ${gen.value.created} documents in ${genSec.toFixed(1)} s = ${docsPerSec.toFixed(0)} documents/s (target ≥ 2,000); again: ${againSec.toFixed(1)} s, ${again.unchanged} unchanged`,
  );
  console.log(
    `export: FIRE ${(fire.value.bytes / 1e6).toFixed(1)} MB in ${fire.value.seconds.toFixed(1)} s (target < 30 s), CSV ${(csv.bytes / 1e6).toFixed(1)} MB in ${csv.seconds.toFixed(1)} s; pgbench ${tps.toFixed(0)} tps`,
  );
  console.log(
    `memory (MiB, this process): generation rss ${JSON.stringify(gen.rss)}, export rss ${JSON.stringify(fire.rss)}, heap peaks ${gen.heapPeak} / ${fire.heapPeak}`,
  );
  console.log(`generation's ports (ms, overlapping): ${JSON.stringify(Object.fromEntries(Object.entries(spent).map(([k, v]) => [k, Math.round(v)])))}`);
  console.log(`checks: ${JSON.stringify(checks)}`);
  console.log(
    JSON.stringify({
      bench: "tax",
      participants: PARTICIPANTS,
      sales_per_participant: SALES,
      refunds,
      generation_seconds: genSec,
      documents_per_sec: docsPerSec,
      target_documents_per_sec: 2_000,
      regenerate_seconds: againSec,
      fire_bytes: fire.value.bytes,
      fire_seconds: fire.value.seconds,
      target_fire_seconds: 30,
      csv_bytes: csv.bytes,
      csv_seconds: csv.seconds,
      memory_mib: { generation: gen.rss, export: fire.rss },
      generation_ports_ms: spent,
      pgbench_tps: tps,
      ...checks,
    }),
  );
  await sql.end({ timeout: 5 });
  if (!Object.values(checks).every(Boolean)) process.exitCode = 1;
} finally {
  await tax?.stop();
  for (const c of children.reverse()) await c.stop();
  await infra.stop();
  rmSync(scratch, { recursive: true, force: true });
}
