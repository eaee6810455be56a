/** The engine's view (engine.ts: LedgerView) of the rows a batch read and locked (read.ts). */
import { cents, type Cents, type SystemAccountType } from "@treasury/contracts";
import type { Side } from "../domain/accounts.ts";
import type { HoldState, LedgerView, WalletState } from "./engine.ts";
import { scopeKey } from "./pending.ts";
import type { Rows } from "./read.ts";

/**
 * The engine's view of the batch for one request's org and environment. A class rather than an object of arrow
 * functions: the view is made once per request, and each named closure would cost a property definition.
 */
export class RequestView implements LedgerView {
  constructor(
    private readonly rows: Rows,
    private readonly systemIds: ReadonlyMap<string, string>,
    private readonly state: ReadonlyMap<string, WalletState>,
    private readonly holds: ReadonlyMap<string, HoldState>,
    private readonly orgId: string,
    private readonly livemode: boolean,
  ) {}

  systemAccountId(type: SystemAccountType, entityId: string): string | undefined {
    return this.systemIds.get(scopeKey(this.orgId, this.livemode, `${type}:${entityId}`));
  }

  participantWalletId(participantId: string): string | undefined {
    return this.rows.participants.get(scopeKey(this.orgId, this.livemode, participantId));
  }

  wallet(id: string): WalletState | undefined {
    return this.state.get(id);
  }

  hold(id: string): HoldState | undefined {
    return this.holds.get(id);
  }

  receivable(participantId: string): { id: string; outstanding: Cents } | undefined {
    const r = this.rows.owed.get(scopeKey(this.orgId, this.livemode, participantId));
    return r === undefined ? undefined : { id: r.id, outstanding: cents(r.outstanding) };
  }

  participantExists(participantId: string): boolean {
    return this.rows.existingParticipants.has(scopeKey(this.orgId, this.livemode, participantId));
  }

  systemAccountNormal(id: string): Side | undefined {
    return this.rows.systemNormals.get(id);
  }
}
