/**
 * In-memory fakes of the tax use cases' ports (usecases/ports.ts), for unit tests. The document store keeps the
 * store's contract: one current document per (tenant, year, participant), drafts updated only when their figures
 * change, filed ones left alone, a correction linking both ways. Concurrency is the PostgreSQL store's.
 */
import type { schemas, Tenant } from "@treasury/contracts";
import { sameFigures, type TaxDocument } from "../src/domain/documents.ts";
import type { TaxSettings } from "../src/domain/thresholds.ts";
import type { Generation } from "../src/domain/generations.ts";
import type { DocumentStore, ExportStore, GenerationStore, PendingEvent, TaxDeps, TaxProfile } from "../src/usecases/ports.ts";

const key = (t: Tenant, ...rest: (string | number)[]) => [t.orgId, t.livemode, ...rest].join("|");
const same = (a: Tenant, b: Tenant) => a.orgId === b.orgId && a.livemode === b.livemode;

export interface Fakes {
  deps: TaxDeps;
  events: PendingEvent[];
  docs: TaxDocument[];
  /** The ledger's figures by tenant key and year: what taxFigures answers. */
  figures: Map<string, schemas.TaxFigures[]>;
  participants: Set<string>;
  clock: { now: Date };
}

async function writeDrafts(
  docs: TaxDocument[],
  events: PendingEvent[],
  profiles: Map<string, TaxProfile>,
  ...[t, year, drafts, below, at, event]: Parameters<DocumentStore["writeDrafts"]>
): ReturnType<DocumentStore["writeDrafts"]> {
  const current = (x: Tenant, y: number) => docs.filter((d) => same(d.tenant, x) && d.taxYear === y && d.status !== "corrected");
  const out = { created: 0, updated: 0, unchanged: 0, filed: 0, removed: 0 };
  for (const w of drafts) {
    const existing = current(t, year).find((d) => d.participantId === w.figures.participantId);
    const tinLast4 = profiles.get(key(t, w.figures.participantId))?.tinLast4 ?? null;
    if (existing?.status === "filed") out.filed += 1;
    else if (existing !== undefined && sameFigures(existing, w.figures) && existing.form === w.form && existing.recipientTinLast4 === tinLast4)
      out.unchanged += 1;
    else if (existing !== undefined) {
      Object.assign(existing, w.figures, { form: w.form, recipientTinLast4: tinLast4, updatedAt: at });
      out.updated += 1;
      events.push(event(existing));
    } else {
      const d: TaxDocument = {
        id: w.newId,
        tenant: t,
        taxYear: year,
        ...w.figures,
        form: w.form,
        status: "draft",
        recipientTinLast4: tinLast4,
        corrects: null,
        correctedBy: null,
        correctionReason: null,
        filedAt: null,
        createdAt: at,
        updatedAt: at,
      };
      docs.push(d);
      out.created += 1;
      events.push(event(d));
    }
  }
  for (const p of below) {
    const i = docs.findIndex((d) => same(d.tenant, t) && d.taxYear === year && d.participantId === p && d.status === "draft" && d.corrects === null);
    if (i >= 0) {
      docs.splice(i, 1);
      out.removed += 1;
    }
  }
  return out;
}

function documentStore(docs: TaxDocument[], events: PendingEvent[], profiles: Map<string, TaxProfile>): DocumentStore {
  const current = (t: Tenant, year: number) => docs.filter((d) => same(d.tenant, t) && d.taxYear === year && d.status !== "corrected");
  return {
    writeDrafts: (t, year, drafts, below, at, event) => writeDrafts(docs, events, profiles, t, year, drafts, below, at, event),
    get: async (t, id) => docs.find((d) => same(d.tenant, t) && d.id === id),
    async list(t, q) {
      const all = docs.filter((d) => same(d.tenant, t) && (q.taxYear === undefined || d.taxYear === q.taxYear));
      return { documents: all.slice(q.offset, q.offset + q.limit), total: all.length };
    },
    async markFiled(t, id, at, event) {
      const d = docs.find((x) => same(x.tenant, t) && x.id === id && x.status === "draft");
      if (d === undefined) return undefined;
      Object.assign(d, { status: "filed", filedAt: at, updatedAt: at });
      events.push(event(d));
      return d;
    },
    async correct(t, id, s, at, event) {
      const original = docs.find((x) => same(x.tenant, t) && x.id === id && x.status === "filed");
      if (original === undefined) return undefined;
      Object.assign(original, { status: "corrected", correctedBy: s.id, updatedAt: at });
      const corrected: TaxDocument = {
        ...original,
        ...s.figures,
        id: s.id,
        form: s.form,
        status: "draft",
        recipientTinLast4: s.recipientTinLast4,
        corrects: id,
        correctedBy: null,
        correctionReason: s.reason,
        filedAt: null,
        createdAt: at,
        updatedAt: at,
      };
      docs.push(corrected);
      events.push(event(original, corrected));
      return { original, corrected };
    },
    countCurrent: async (t, year) => current(t, year).length,
    async *current(t, year, pageSize) {
      const all = current(t, year).sort((a, b) => a.form.localeCompare(b.form) || a.participantId.localeCompare(b.participantId));
      for (let i = 0; i < all.length; i += pageSize) yield all.slice(i, i + pageSize);
    },
    async summary(t, year) {
      const rows = new Map<string, { form: string; status: string; count: number; reportedCents: number }>();
      for (const d of docs.filter((x) => same(x.tenant, t) && x.taxYear === year)) {
        const r = rows.get(`${d.form}|${d.status}`) ?? { form: d.form, status: d.status, count: 0, reportedCents: 0 };
        r.count += 1;
        r.reportedCents += d.form === "1099-NEC" ? d.grossCents - d.refundsCents : d.grossCents;
        rows.set(`${d.form}|${d.status}`, r);
      }
      return [...rows.values()];
    },
  };
}

/** A port these unit tests never reach (exports are proven on PostgreSQL: exports.int.test.ts). */
const unused = (port: string) => () => Promise.reject(new Error(`${port} is not used by the unit tests`));

const noExports: ExportStore = {
  start: unused("exports.start"),
  get: async () => undefined,
  claim: async () => undefined,
  addPart: unused("exports.addPart"),
  finish: unused("exports.finish"),
  release: unused("exports.release"),
  part: async () => undefined,
};

/** Generation jobs in memory: started, found, claimed when nobody holds them (the runner's loop is PostgreSQL's). */
function generationStore(): GenerationStore {
  const jobs: Generation[] = [];
  return {
    async start(t, taxYear, id) {
      const running = jobs.find((g) => same(g.tenant, t) && g.taxYear === taxYear && g.status === "running");
      if (running !== undefined) return { generation: running, started: false };
      const at = new Date();
      const g: Generation = {
        id,
        tenant: t,
        taxYear,
        status: "running",
        after: null,
        participantsRead: 0,
        created: 0,
        updated: 0,
        unchanged: 0,
        filed: 0,
        removed: 0,
        lastError: null,
        createdAt: at,
        updatedAt: at,
        finishedAt: null,
      };
      jobs.push(g);
      return { generation: g, started: true };
    },
    get: async (t, id) => jobs.find((g) => g.id === id && same(g.tenant, t)),
    claim: async () => undefined,
    release: async () => undefined,
  };
}

export function fakes(): Fakes {
  const events: PendingEvent[] = [];
  const docs: TaxDocument[] = [];
  const figures = new Map<string, schemas.TaxFigures[]>();
  const participants = new Set<string>();
  const profiles = new Map<string, TaxProfile>();
  const settings = new Map<string, TaxSettings>();
  const clock = { now: new Date("2026-03-01T00:00:00Z") };
  let n = 0;
  const party = { tin: "521234567", name: "Payer", address: "1 Main", city: "Dover", state: "DE", zip: "19901", phone: "3025550100" };
  const deps: TaxDeps = {
    profiles: {
      async upsert(p) {
        const k = key(p.tenant, p.participantId);
        const created = !profiles.has(k);
        profiles.set(k, p);
        return { created };
      },
      get: async (t, id) => profiles.get(key(t, id)),
      many: async (t, ids) => new Map(ids.flatMap((id) => (profiles.has(key(t, id)) ? [[id, profiles.get(key(t, id)) as TaxProfile] as const] : []))),
    },
    settings: { put: async (t, s) => void settings.set(key(t, s.taxYear), s), get: async (t, y) => settings.get(key(t, y)) },
    documents: documentStore(docs, events, profiles),
    generations: generationStore(),
    exports: noExports,
    ledger: {
      async figures(t, req) {
        const all = (figures.get(key(t, req.tax_year)) ?? []).slice().sort((a, b) => a.participant_id.localeCompare(b.participant_id));
        if (req.participant_ids !== undefined) {
          const known = req.participant_ids.filter((id) => participants.has(key(t, id)));
          const zero = (id: string) => ({
            participant_id: id,
            gross_cents: 0,
            refunds_cents: 0,
            transaction_count: 0,
            monthly_cents: Array(12).fill(0) as number[],
          });
          return {
            figures: known.map((id) => all.find((f) => f.participant_id === id) ?? zero(id)),
            next_after: null,
            unknown_participant_ids: req.participant_ids.filter((id) => !participants.has(key(t, id))),
          };
        }
        const page = all.filter((f) => f.participant_id > (req.after ?? "")).slice(0, req.limit ?? 1_000);
        return {
          figures: page,
          next_after: page.length === (req.limit ?? 1_000) ? (page[page.length - 1]?.participant_id ?? null) : null,
          unknown_participant_ids: [],
        };
      },
      sources: async () => ({ sources: [], next_after: null }),
    },
    sealer: { seal: (p, aad) => `sealed:${aad}:${Buffer.from(p).toString("base64")}`, open: (s) => Buffer.from(s.split(":").pop() ?? "", "base64").toString() },
    pdf: { recipientCopy: async (c) => Buffer.from(JSON.stringify({ id: c.document.id, last4: c.recipient.tinLast4 })) },
    filer: { transmitter: { ...party, tcc: "12ABC", contactName: "Ops", contactEmail: "ops@example.com" }, payer: party },
    now: () => clock.now,
    newId: () => `taxdoc_${String(++n).padStart(6, "0")}`,
    newGenerationId: () => `taxgen_${String(++n).padStart(6, "0")}`,
    newExportId: () => `taxexp_${String(++n).padStart(6, "0")}`,
    generatePageSize: 2,
    generationLeaseMs: 30_000,
    exportBytesMax: 100_000,
  };
  return { deps, events, docs, figures, participants, clock };
}

export function figuresOf(participantId: string, gross: number, count: number, refunds = 0): schemas.TaxFigures {
  const monthly = Array.from({ length: 12 }, () => 0);
  monthly[0] = gross;
  return { participant_id: participantId, gross_cents: gross, refunds_cents: refunds, transaction_count: count, monthly_cents: monthly };
}
