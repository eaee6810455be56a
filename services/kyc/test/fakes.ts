/**
 * In-memory stand-ins for the kyc ports (usecases/ports.ts), for the use cases' unit tests: no PostgreSQL, no
 * NATS. A transaction runs alone (one at a time, as the verification locks make them) and leaves nothing behind
 * when it throws, as a rolled-back PostgreSQL transaction does.
 */
import { DomainError, newId, type Tenant } from "@treasury/contracts";
import { generateKeyRingEntry, parseKeyRing, Sealer, type NewEvent } from "@treasury/service-kit";
import type { KycStatus } from "../src/domain/states.ts";
import type {
  KycDeps,
  KycStore,
  KycTx,
  ListQuery,
  NewReviewAction,
  ParticipantDirectory,
  ReviewActionRow,
  ReviewQueueRow,
  SubmissionRow,
  VerificationKey,
  VerificationRow,
} from "../src/usecases/ports.ts";

interface State {
  submissions: SubmissionRow[];
  verifications: Array<VerificationRow & { subject: "business" | "creator" }>;
  reviewActions: Array<NewReviewAction & { id: string }>;
  events: Array<NewEvent & { id: string }>;
}

type RecordOp = "insertReviewAction" | "writeEvent" | "submissionHistory" | "reviewActionsOf" | "lockStaleSealed" | "updateSealed";

const keyMatches = (v: State["verifications"][number], key: VerificationKey): boolean =>
  v.subject === key.subject && v.org_id === key.orgId && v.livemode === key.livemode && (key.subject === "business" || v.participant_id === key.participantId);

export class MemKycStore implements KycStore {
  state: State = { submissions: [], verifications: [], reviewActions: [], events: [] };
  private tail: Promise<unknown> = Promise.resolve();
  private actionSeq = 0;

  transaction<T>(fn: (tx: KycTx) => Promise<T>): Promise<T> {
    const run = async (): Promise<T> => {
      const before = structuredClone(this.state);
      try {
        return await fn(this.tx());
      } catch (e) {
        this.state = before;
        throw e;
      }
    };
    const mine = this.tail.then(run, run);
    this.tail = mine.catch(() => undefined);
    return mine;
  }

  async findVerification(key: VerificationKey): Promise<VerificationRow | undefined> {
    const v = this.state.verifications.find((x) => keyMatches(x, key));
    if (v === undefined) return undefined;
    const { subject: _s, ...row } = v;
    return structuredClone(row);
  }

  async getSubmission(id: string): Promise<SubmissionRow | undefined> {
    return structuredClone(this.state.submissions.find((s) => s.id === id));
  }

  async listByStatus(q: ListQuery): Promise<ReviewQueueRow[]> {
    return this.state.verifications
      .filter((v) => v.status === q.status && (q.orgId === undefined || v.org_id === q.orgId) && (q.subject === undefined || v.subject === q.subject))
      .filter((v) => q.livemode === undefined || v.livemode === q.livemode)
      .map((v) => ({ v, s: this.state.submissions.find((s) => s.id === v.latest_submission_id)! }))
      .sort((a, b) => (a.s.submitted_at ?? a.s.created_at).getTime() - (b.s.submitted_at ?? b.s.created_at).getTime())
      .slice(0, q.limit)
      .map(({ v, s }) => ({
        submission_id: s.id,
        subject: s.subject,
        org_id: v.org_id,
        livemode: v.livemode,
        participant_id: v.participant_id,
        status: v.status,
        business_type: s.business_type,
        tax_id_type: s.tax_id_type,
        tax_id_last4: s.tax_id_last4,
        certify_tax_info: s.certify_tax_info,
        document_types: s.document_types,
        submitted_at: s.submitted_at,
        updated_at: v.updated_at,
      }));
  }

  private submission(id: string): SubmissionRow {
    const s = this.state.submissions.find((x) => x.id === id);
    if (s === undefined) throw new Error(`no submission ${id}`);
    return s;
  }

  private tx(): KycTx {
    return { ...this.verificationOps(), ...this.recordOps() };
  }

  /** Verifications and submissions. */
  private verificationOps(): Omit<KycTx, RecordOp> {
    const st = () => this.state;
    return {
      lockVerification: async () => undefined,
      findVerification: (key) => this.findVerification(key),
      verificationsOf: async (s) =>
        st()
          .verifications.filter((v) => v.subject === s.subject && v.org_id === s.org_id && v.latest_submission_id === s.id)
          .filter((v) => s.subject === "business" || v.livemode === s.livemode)
          .sort((a, b) => Number(a.livemode !== s.livemode) - Number(b.livemode !== s.livemode))
          .map(({ subject: _s, ...v }) => structuredClone(v)),
      saveVerification: async (key, v) => {
        const row = { status: v.status, tax_certified: v.taxCertified, latest_submission_id: v.latestSubmissionId, updated_at: new Date() };
        const existing = st().verifications.find((x) => keyMatches(x, key));
        if (existing !== undefined) Object.assign(existing, row);
        else {
          const participant_id = key.subject === "creator" ? key.participantId : null;
          st().verifications.push({ subject: key.subject, org_id: key.orgId, livemode: key.livemode, participant_id, ...row });
        }
      },
      insertSubmission: async (n) => {
        const { request_id: _r, key_id: _k, ...rest } = structuredClone(n);
        const row: SubmissionRow = { ...rest, rejection_reason: null, created_at: new Date() };
        st().submissions.push(row);
        return structuredClone(row);
      },
      getSubmission: (id) => this.getSubmission(id),
      supersede: async (id) => {
        const s = st().submissions.find((x) => x.id === id);
        const resting = st().verifications.some((v) => v.latest_submission_id === id);
        if (s !== undefined && (s.status === "pending" || s.status === "under_review") && !resting) s.status = "superseded";
      },
      setSubmissionDecision: async (id, d) => {
        const s = this.submission(id);
        Object.assign(s, { status: d.status, reviewed_at: d.reviewedAt, rejection_reason: d.rejectionReason });
        return structuredClone(s);
      },
    };
  }

  /** The audit trail, events, history and re-sealing. */
  private recordOps(): Pick<KycTx, RecordOp> {
    const st = () => this.state;
    return {
      insertReviewAction: async (a) => {
        const id = String(++this.actionSeq);
        st().reviewActions.push({ ...structuredClone(a), id });
        return id;
      },
      writeEvent: async (e) => {
        const id = e.id ?? newId("evt");
        st().events.push({ ...structuredClone(e), id });
        return id;
      },
      submissionHistory: async (key) =>
        st()
          .submissions.filter((s) => s.subject === key.subject && s.org_id === key.orgId && s.livemode === key.livemode)
          .filter((s) => key.subject === "business" || s.participant_id === key.participantId)
          .map((s) => ({
            id: s.id,
            status: s.status,
            livemode: s.livemode,
            submitted_at: s.submitted_at,
            reviewed_at: s.reviewed_at,
            rejection_reason: s.rejection_reason,
            created_at: s.created_at,
          })),
      reviewActionsOf: async (submissionId): Promise<ReviewActionRow[]> =>
        st()
          .reviewActions.filter((a) => a.submission_id === submissionId)
          .map((a) => ({
            id: a.id,
            action: a.action,
            from_status: a.from_status,
            to_status: a.to_status,
            actor: a.actor,
            reason: a.reason,
            event_id: a.event_id,
            created_at: a.created_at,
          })),
      lockStaleSealed: async (keyIds, limit) =>
        st()
          .submissions.filter((s) => keyIds.includes(s.pii_key_id))
          .slice(0, limit)
          .map((s) => ({ id: s.id, pii: s.pii })),
      updateSealed: async (id, pii, keyId) => {
        Object.assign(this.submission(id), { pii, pii_key_id: keyId });
      },
    };
  }

  /** The verification's status, or undefined. */
  statusOf(key: VerificationKey): KycStatus | undefined {
    return this.state.verifications.find((v) => keyMatches(v, key))?.status;
  }
}

/** The participants a test declares, per org and environment; every lookup is counted. */
export class FakeParticipants implements ParticipantDirectory {
  readonly known = new Set<string>();
  lookups = 0;

  add(t: Tenant, participantId: string): void {
    this.known.add(`${t.orgId}|${String(t.livemode)}|${participantId}`);
  }

  async requireParticipant(t: Tenant, participantId: string): Promise<void> {
    this.lookups++;
    if (!this.known.has(`${t.orgId}|${String(t.livemode)}|${participantId}`)) {
      throw new DomainError("participant_not_found", `Participant ${participantId} not found`);
    }
  }
}

export function newSealer(...kids: string[]): Sealer {
  const ids = kids.length > 0 ? kids : ["k1"];
  return new Sealer(parseKeyRing(ids.map((k) => generateKeyRingEntry(k)).join(","), ids.at(-1)));
}

export const AT = new Date("2026-03-04T05:06:07.000Z");

export function fakes(opts: { sealer?: Sealer | undefined } = {}): { deps: KycDeps; store: MemKycStore; participants: FakeParticipants } {
  const store = new MemKycStore();
  const participants = new FakeParticipants();
  const sealer = "sealer" in opts ? opts.sealer : newSealer();
  return { deps: { store, sealer, participants, now: () => AT }, store, participants };
}
