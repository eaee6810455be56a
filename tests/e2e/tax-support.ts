/**
 * Helpers of the tax e2e tests: sales and refunds posted through the ledger's own posting subject with their
 * accounting dates (as a service that records a past year's sales would), and a reader of IRS FIRE files written
 * here from Publication 1220's layouts, independent of the service's writer.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { natsLedgerPort, type LedgerPort } from "@treasury/service-kit";

export interface Poster {
  sale(participantId: string, reference: string, gross: number, effectiveDate: string): Promise<string>;
  refund(saleReference: string, amount: number, effectiveDate: string): Promise<string>;
}

/** A poster for one org's sandbox: each sale splits 80/20 between the creator and the platform. */
export function ledgerPoster(nc: NatsConnection, prefix: string, orgId: string, livemode = false): Poster {
  const port: LedgerPort = natsLedgerPort(nc, prefix, { caller: "test", timeoutMs: 20_000 });
  return {
    async sale(participantId, reference, gross, effectiveDate) {
      const creator = Math.floor((gross * 80) / 100);
      const posted = await port.post({
        org_id: orgId,
        livemode,
        kind: "sale",
        reference_id: reference,
        postings: [
          { debit: { system: "platform_cash" }, credit: { participant_id: participantId }, amount: creator },
          { debit: { system: "platform_cash" }, credit: { system: "platform_revenue" }, amount: gross - creator },
        ],
        sale: { sale_reference: reference, participant_id: participantId, gross, creator_amount: creator, platform_amount: gross - creator },
        effective_date: effectiveDate,
      });
      return posted.transaction_id;
    },
    async refund(saleReference, amount, effectiveDate) {
      const posted = await port.post({
        org_id: orgId,
        livemode,
        kind: "refund",
        reference_id: `refund:${saleReference}:${amount}:${effectiveDate}`,
        refund: { sale_reference: saleReference, amount },
        effective_date: effectiveDate,
      });
      return posted.transaction_id;
    },
  };
}

export interface FireRecord {
  type: string;
  text: string;
  /** 1-based positions, as Publication 1220 prints them. */
  at(start: number, end: number): string;
  num(start: number, end: number): number;
}

/** Splits a FIRE file into its records; throws unless every record is 750 bytes ending in CR LF. */
export function readFire(file: string): FireRecord[] {
  if (file.length % 750 !== 0) throw new Error(`file length ${file.length} is not a multiple of 750`);
  const out: FireRecord[] = [];
  for (let i = 0; i < file.length; i += 750) {
    const text = file.slice(i, i + 750);
    if (!text.endsWith("\r\n")) throw new Error(`record ${i / 750 + 1} does not end in CR LF`);
    if (/[^\x20-\x7e\r\n]/.test(text)) throw new Error(`record ${i / 750 + 1} has a character outside printable ASCII`);
    const at = (start: number, end: number) => text.slice(start - 1, end);
    out.push({ type: text[0] ?? "", text, at, num: (s, e) => Number(at(s, e)) });
  }
  return out;
}

/** Payment Amount fields of a B record (12 digits each from position 55), by amount code. */
export const B_AMOUNT_CODES = ["1", "2", "3", "4", "5", "6", "7", "8", "9", "A", "B", "C", "D", "E", "F", "G", "H", "J"];
export function bAmount(r: FireRecord, code: string): number {
  const i = B_AMOUNT_CODES.indexOf(code);
  return r.num(55 + i * 12, 66 + i * 12);
}
/** Control Total fields of a C or K record (18 digits each from position 16). */
export function controlTotal(r: FireRecord, code: string): number {
  const i = B_AMOUNT_CODES.indexOf(code);
  return r.num(16 + i * 18, 33 + i * 18);
}
