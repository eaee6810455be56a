/**
 * Walking one org and environment's proof chain in sequence order. A proof that was removed, altered or
 * inserted out of turn shows as a problem: a gap in the sequences, a previous_hash that is not the entry_hash
 * before it, an entry_hash or receipt_hash that does not recompute, or a head that is not the last link.
 */
import { entryHash, GENESIS_HASH, sha256Hex } from "./canonical.ts";

export interface StoredLink {
  sequence: number;
  previous_hash: string;
  entry_hash: string;
  receipt_hash: string;
  canonical_payload: string;
}

export class ChainWalk {
  private expectedSequence: number;
  private expectedPrevious: string;
  readonly problems: string[] = [];

  /** From the first link, or from the link after a checkpoint (its sequence and entry_hash). */
  constructor(from: { sequence: number; entry_hash: string } = { sequence: 0, entry_hash: GENESIS_HASH }) {
    this.expectedSequence = from.sequence + 1;
    this.expectedPrevious = from.entry_hash;
  }

  /** The last link walked (or the starting point): where a checkpoint of this walk would stand. */
  get last(): { sequence: number; entry_hash: string } {
    return { sequence: this.expectedSequence - 1, entry_hash: this.expectedPrevious };
  }

  /** Checks the next link (links must be given in ascending sequence order). */
  add(link: StoredLink): void {
    if (link.sequence !== this.expectedSequence) this.problems.push(`sequence ${this.expectedSequence} is missing (next link is ${link.sequence})`);
    if (link.previous_hash !== this.expectedPrevious) this.problems.push(`sequence ${link.sequence}: previous_hash is not the entry_hash before it`);
    if (sha256Hex(link.canonical_payload) !== link.receipt_hash) this.problems.push(`sequence ${link.sequence}: receipt_hash does not match canonical_payload`);
    if (entryHash(link) !== link.entry_hash) this.problems.push(`sequence ${link.sequence}: entry_hash does not recompute`);
    this.expectedSequence = link.sequence + 1;
    this.expectedPrevious = link.entry_hash;
  }

  /** The recorded head must be the last link walked; a removed tail shows here. */
  finish(head: { last_sequence: number; last_entry_hash: string } | undefined): void {
    const lastSequence = this.expectedSequence - 1;
    if (head === undefined) {
      if (lastSequence > 0) this.problems.push("the chain has links but no head");
      return;
    }
    if (head.last_sequence !== lastSequence || head.last_entry_hash !== this.expectedPrevious) {
      this.problems.push(`the chain head (sequence ${head.last_sequence}) is not its last link (sequence ${lastSequence})`);
    }
  }
}
