/**
 * What the integration tests of the live rail share: an ACH origin, a stand-in answering `svc.ledger.post` over
 * real NATS (a service may not import another; the end-to-end tests run the real ledger), and live payouts
 * inserted as a request leaves them, waiting for a file.
 */
import { connect } from "@nats-io/transport-node";
import { newId, type PostRequestInput } from "@treasury/contracts";
import { createLogger, RpcServer, type Sealer } from "@treasury/service-kit";
import { natsOptions, type TestEnv } from "@treasury/testing";
import { bankAccountAad, payoutDestinationAad } from "../src/usecases/deps.ts";

export const ORIGIN = {
  immediateDestination: "091000019",
  immediateDestinationName: "ODFI BANK",
  immediateOrigin: "1987654321",
  immediateOriginName: "PLATFORM",
  companyName: "PLATFORM",
  companyId: "1987654321",
  odfiRouting: "091000019",
  entryDescription: "PAYOUT",
};

export const LIVE_ORG = "org_int";
export const LIVE_PARTICIPANT = "creator_int";
const LIVE_WALLET = "00000000-0000-4000-8000-000000000001";

export interface LedgerStandIn {
  /** Every post request received, in order. */
  posted: PostRequestInput[];
  close(): Promise<void>;
}

/** Answers every post as the ledger would a new transaction, with an id derived from its reference. */
export async function startLedgerStandIn(env: TestEnv): Promise<LedgerStandIn> {
  const nc = await connect(natsOptions(env.natsUrl));
  const ledger = new RpcServer({
    nc,
    prefix: env.prefix,
    service: "ledger",
    log: createLogger({ service: "ledger-standin", level: "silent" }),
    concurrencyMax: 16,
  });
  const posted: PostRequestInput[] = [];
  ledger.handleRaw("post", async (payload) => {
    const req = payload as PostRequestInput;
    posted.push(req);
    const body = {
      transaction_id: `txn_${req.reference_id.replace(/[^a-z0-9]/gi, "")}`,
      kind: req.kind,
      reference_id: req.reference_id,
      amount: 0,
      created_at: new Date().toISOString(),
      wallets: {},
      holds_created: [],
      holds_released: [],
      extra: {},
      duplicate: false,
    };
    return { ok: true, status: 200, body };
  });
  ledger.start();
  await nc.flush();
  return {
    posted,
    close: async () => {
      await ledger.drain();
      await nc.close();
    },
  };
}

/** A live payout whose money already left the wallet, waiting for a file (as a request leaves it). */
export async function insertPendingLivePayout(
  env: TestEnv,
  sealer: Sealer,
  amount: number,
  createdAt = new Date(),
  participantId = LIVE_PARTICIPANT,
): Promise<string> {
  const id = newId("po");
  await env.adminSql`
    insert into payouts.payouts (id, org_id, livemode, participant_id, reference_id, request_hash, amount, fees, fees_paid_by, net_amount, rail, status,
      ledger_reference, transaction_id, wallet_id, dest_routing_number, dest_account_type, dest_last4, dest_sealed, created_at)
    values (${id}, ${LIVE_ORG}, true, ${participantId}, ${id}, 'h', ${amount}, 0, 'platform', ${amount}, 'bank_ach', 'pending', ${`payout:${id}`},
      ${`txn_${id}`}, ${LIVE_WALLET}, '011000015', 'checking', '6789',
      ${sealer.sealJson({ account_holder_name: "Ada Lovelace", account_number: "000123456789" }, payoutDestinationAad(id))}, ${createdAt})`;
  return id;
}

/** The participant's bank account as PUT bank-account leaves it: the destination insertPendingLivePayout pays. */
export async function insertLiveBankAccount(env: TestEnv, sealer: Sealer, participantId: string): Promise<void> {
  const tenant = { orgId: LIVE_ORG, livemode: true };
  const sealed = sealer.sealJson({ account_holder_name: "Ada Lovelace", account_number: "000123456789" }, bankAccountAad(tenant, participantId));
  await env.adminSql`
    insert into payouts.bank_accounts (id, org_id, livemode, participant_id, routing_number, account_type, last4, sealed, sealed_key_id, created_at, updated_at)
    values (${`ba_${participantId}`}, ${LIVE_ORG}, true, ${participantId}, '011000015', 'checking', '6789', ${sealed}, ${sealer.activeKeyId},
      now() - interval '1 minute', now() - interval '1 minute')`;
}
