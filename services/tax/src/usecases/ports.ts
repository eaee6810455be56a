/**
 * Everything the tax use cases need, and nothing else: stores (store/ implements them on PostgreSQL), the ledger's
 * figures (adapters/ledger.ts), the sealer of TINs, the PDF renderer (adapters/pdf.ts) and the clock. Unit tests
 * run the use cases on the in-memory fakes of test/fakes.ts.
 */
import type { EventType, schemas, Tenant } from "@treasury/contracts";
import type { Figures, TaxDocument } from "../domain/documents.ts";
import type { TaxExport } from "../domain/exports.ts";
import type { Generation } from "../domain/generations.ts";
import type { FireParty, FireTransmitter } from "../domain/fire.ts";
import type { TaxSettings } from "../domain/thresholds.ts";

export interface TaxProfile {
  tenant: Tenant;
  participantId: string;
  legalName: string;
  businessName: string | null;
  tinType: schemas.TinType;
  /** The sealed TIN (Sealer.seal, bound to the tenant and participant). */
  tinSealed: string;
  tinLast4: string;
  businessType: string | null;
  address: schemas.TaxAddress;
  certifiedAt: Date;
  certifiedBy: string;
  updatedAt: Date;
}

export interface ProfileStore {
  upsert(profile: TaxProfile): Promise<{ created: boolean }>;
  get(tenant: Tenant, participantId: string): Promise<TaxProfile | undefined>;
  /** The profiles of these participants (a page of generation or export). */
  many(tenant: Tenant, participantIds: readonly string[]): Promise<Map<string, TaxProfile>>;
}

export interface SettingsStore {
  put(tenant: Tenant, settings: TaxSettings): Promise<void>;
  /** The org's settings of the year, or undefined (the federal defaults apply). */
  get(tenant: Tenant, taxYear: number): Promise<TaxSettings | undefined>;
}

/** An event to write with the change, in its transaction (the kit's outbox). */
export interface PendingEvent {
  type: EventType;
  data: Record<string, unknown>;
}

/** What one page of generation writes for one participant (the store adds the TIN's last four from the profile). */
export interface DraftWrite {
  figures: Figures;
  form: schemas.TaxForm;
  /** The id a new draft gets (unused when the participant has one already). */
  newId: string;
}

export interface GenerateOutcome {
  created: number;
  updated: number;
  unchanged: number;
  /** The participant's current document is filed: generation leaves it (a change is a correction). */
  filed: number;
  removed: number;
}

/** A job's page: committed with the page's documents, so a resumed job reads on from exactly there. */
export interface PageProgress {
  generationId: string;
  /** The ledger's cursor after this page; null when it was the last (the job succeeds with it). */
  after: string | null;
  participantsRead: number;
  /** How long the runner holds the job after this page. */
  leaseMs: number;
}

export interface GenerationStore {
  /** A new running job for the year, or the one already running (started false). */
  start(tenant: Tenant, taxYear: number, id: string): Promise<{ generation: Generation; started: boolean }>;
  get(tenant: Tenant, id: string): Promise<Generation | undefined>;
  /** The oldest running job nobody holds (its lease ran out, or it was never taken), now held for `leaseMs`. */
  claim(leaseMs: number): Promise<Generation | undefined>;
  /** Lets a job go after a failed run, noting why; passes take it up again after `retryMs`. */
  release(id: string, error: string, retryMs: number): Promise<void>;
}

export interface ExportStore {
  start(tenant: Tenant, taxYear: number, format: schemas.ExportFormat, id: string): Promise<TaxExport>;
  get(tenant: Tenant, id: string): Promise<TaxExport | undefined>;
  /** The oldest running export nobody holds, now held for `leaseMs`, its parts so far dropped (it starts over). */
  claim(leaseMs: number): Promise<TaxExport | undefined>;
  /** Part `part` (from 1) sealed, with the job's size and lease moved on, in one transaction. */
  addPart(id: string, part: number, sealed: string, bytes: number, leaseMs: number): Promise<void>;
  finish(id: string): Promise<void>;
  release(id: string, error: string, retryMs: number): Promise<void>;
  /** A part's sealed text, or undefined. */
  part(tenant: Tenant, id: string, part: number): Promise<string | undefined>;
}

export interface DocumentQuery {
  taxYear: number | undefined;
  status: schemas.TaxDocumentStatus | undefined;
  participantId: string | undefined;
  limit: number;
  offset: number;
}

export interface DocumentStore {
  /**
   * One transaction for a page of participants: a new draft for those without a current document, updated
   * figures for drafts that changed, nothing for filed ones; drafts of `below` (under the threshold now) removed.
   * Each draft carries the last four digits of its participant's W-9 TIN, when there is a profile. Each created or
   * changed draft writes `event(document)`.
   */
  writeDrafts(
    tenant: Tenant,
    taxYear: number,
    drafts: readonly DraftWrite[],
    below: readonly string[],
    at: Date,
    event: (d: TaxDocument) => PendingEvent,
    progress?: PageProgress,
  ): Promise<GenerateOutcome>;
  get(tenant: Tenant, id: string): Promise<TaxDocument | undefined>;
  list(tenant: Tenant, q: DocumentQuery): Promise<{ documents: TaxDocument[]; total: number }>;
  /** draft → filed with its event; undefined when it is not a draft (any more). */
  markFiled(tenant: Tenant, id: string, at: Date, event: (d: TaxDocument) => PendingEvent): Promise<TaxDocument | undefined>;
  /**
   * filed → corrected, and the correcting draft inserted, linked both ways, with the event; undefined when the
   * original is not filed (any more).
   */
  correct(
    tenant: Tenant,
    id: string,
    successor: { id: string; figures: Figures; form: schemas.TaxForm; recipientTinLast4: string | null; reason: string | null },
    at: Date,
    event: (original: TaxDocument, corrected: TaxDocument) => PendingEvent,
  ): Promise<{ original: TaxDocument; corrected: TaxDocument } | undefined>;
  /** Current documents (draft or filed) of a year. */
  countCurrent(tenant: Tenant, taxYear: number): Promise<number>;
  /** Current documents of a year by form then participant, `pageSize` at a time: an export reads them in pages. */
  current(tenant: Tenant, taxYear: number, pageSize: number): AsyncIterable<TaxDocument[]>;
  summary(tenant: Tenant, taxYear: number): Promise<{ form: string; status: string; count: number; reportedCents: number }[]>;
}

/** The ledger's figures (svc.ledger.internal.taxFigures / taxSources). Throws service_unavailable when it cannot answer. */
export interface LedgerFigures {
  figures(tenant: Tenant, req: Omit<schemas.TaxFiguresRequest, "org_id" | "livemode">): Promise<schemas.TaxFiguresAnswer>;
  sources(tenant: Tenant, req: Omit<schemas.TaxSourcesRequest, "org_id" | "livemode">): Promise<schemas.TaxSourcesAnswer>;
}

/** Seals and opens TINs at rest; undefined when no key ring is configured (profiles are refused, 503). */
export interface TinSealer {
  seal(plaintext: string, aad: string): string;
  open(sealed: string, aad: string): string;
}

export interface RecipientCopy {
  document: TaxDocument;
  recipient: { name: string; tinType: schemas.TinType | null; tinLast4: string | null; address: schemas.TaxAddress | null };
  payer: FireParty;
}

export interface PdfRenderer {
  recipientCopy(copy: RecipientCopy): Promise<Buffer>;
}

export interface TaxDeps {
  profiles: ProfileStore;
  settings: SettingsStore;
  documents: DocumentStore;
  generations: GenerationStore;
  exports: ExportStore;
  ledger: LedgerFigures;
  sealer: TinSealer | undefined;
  pdf: PdfRenderer;
  /** Who files: the transmitter of FIRE files and the payer named on every form (configuration). */
  filer: { transmitter: FireTransmitter; payer: FireParty };
  /** The tenant's time: real time in live, the org's test clock in sandbox (ADR 0017). */
  now(tenant: Tenant): Date;
  newId(): string;
  newGenerationId(): string;
  newExportId(): string;
  /** Participants per ledger page and per write transaction of generation. */
  generatePageSize: number;
  /** How long a runner holds a generation job past its last page (a stopped runner's job is taken up after it). */
  generationLeaseMs: number;
  /** The largest export answered over the API (bytes); larger ones are export_too_large. */
  exportBytesMax: number;
}

/** The service's runner of a kind of job (generations, exports), as the API uses it. */
export interface JobRunner {
  /** How long the API waits for a job before answering 202. */
  waitMs: number;
  /** Has a pass take the job up now, and resolves when it ends here or after `ms`, whichever is first. */
  runUntilDone(id: string, ms: number): Promise<void>;
}
