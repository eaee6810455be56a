/**
 * The gateway's operator commands: orgs, API keys and maintenance mode. Each change is a write to the gateway's
 * own tables made through `call.q`, so it commits with its audit row or not at all; the NOTIFY it sends reaches the
 * gateways' auth caches at that commit.
 */
import { DomainError, type AdminRequest } from "@treasury/contracts";
import { booleanFlag, environmentFlag, flag, requiredFlag, type AdminCommand, type Service, type Sql, type Tx } from "@treasury/service-kit";
import { createApiKey, createOrg, parseScopes, revokeApiKey, setMaintenance, setOrgStatus, type MaintenanceSetting } from "../admin.ts";
import type { KybCheck } from "./kyb.ts";

const RETRY_AFTER_DEFAULT_S = 60;
const RETRY_AFTER_MAX_S = 86_400;

export interface AdminCommandsDeps {
  /** Whether an org may have live keys: the KYC service owns business verifications. */
  kyb: KybCheck;
}

function field(result: Record<string, unknown> | undefined, key: string): string | undefined {
  const v = result?.[key];
  return typeof v === "string" ? v : undefined;
}

async function keyOwner(q: Sql | Tx, keyId: string | undefined): Promise<{ org_id: string; livemode: boolean } | undefined> {
  if (keyId === undefined) return undefined;
  const [row] = await q<{ org_id: string; livemode: boolean }[]>`select org_id, livemode from gateway.api_keys where id = ${keyId}`;
  return row;
}

const orgCreate: AdminCommand<{ name: string }> = {
  decode: (request) => ({ name: requiredFlag(request, "name") }),
  audit: {
    atomic: true,
    target: ({ request }, result) => {
      const org = field(result, "org_id");
      return { orgId: org ?? null, targetIds: [org], details: { name: flag(request, "name") ?? null } };
    },
  },
  run: (call) => createOrg(call.q, { name: call.input.name }),
};

function orgStatus(status: "active" | "suspended"): AdminCommand<{ org: string }> {
  return {
    decode: (request) => ({ org: requiredFlag(request, "org") }),
    audit: {
      atomic: true,
      target: ({ request }) => ({ orgId: flag(request, "org") ?? null, targetIds: [flag(request, "org")] }),
    },
    async run(call) {
      await setOrgStatus(call.q, call.input.org, status);
      return { org_id: call.input.org, status };
    },
  };
}

interface KeyCreate {
  org: string;
  livemode: boolean;
  scopes: ReturnType<typeof parseScopes>;
  forceUnverified: boolean;
}

function keyCreate(deps: AdminCommandsDeps): AdminCommand<KeyCreate> {
  return {
    decode(request) {
      const { livemode } = environmentFlag(request);
      const org = requiredFlag(request, "org");
      return { org, livemode, scopes: parseScopes(flag(request, "scopes")), forceUnverified: booleanFlag(request, "force-unverified") };
    },
    audit: {
      atomic: true,
      // The key itself is shown once, to the operator, and never recorded: only its id.
      target: ({ request }, result) => {
        const env = flag(request, "env");
        return {
          orgId: flag(request, "org") ?? null,
          livemode: env === "live" ? true : env === "test" ? false : null,
          targetIds: [flag(request, "org"), field(result, "key_id")],
          details: { scopes: flag(request, "scopes") ?? null, force_unverified: booleanFlag(request, "force-unverified") },
        };
      },
    },
    run: (call) =>
      createApiKey(call.q, {
        orgId: call.input.org,
        environment: call.input.livemode ? "live" : "sandbox",
        scopes: call.input.scopes,
        forceUnverified: call.input.forceUnverified,
        kybApproved: () => deps.kyb(call.input.org, call.requestId),
      }),
  };
}

const keyRevoke: AdminCommand<{ keyId: string }> = {
  decode: (request) => ({ keyId: requiredFlag(request, "key-id") }),
  audit: {
    atomic: true,
    // The key's org and environment, read in the transaction of the change (or after a failure).
    target: async ({ request }, _result, q) => {
      const keyId = flag(request, "key-id");
      const owner = await keyOwner(q, keyId);
      return { orgId: owner?.org_id ?? null, livemode: owner?.livemode ?? null, targetIds: [keyId, owner?.org_id] };
    },
  },
  async run(call) {
    await revokeApiKey(call.q, call.input.keyId);
    return { key_id: call.input.keyId, revoked: true };
  },
};

/** `--retry-after` in whole seconds; a flag given without a value is not a number of seconds. */
function retryAfter(request: AdminRequest): number {
  const raw = request.flags["retry-after"];
  const seconds = raw === undefined ? RETRY_AFTER_DEFAULT_S : typeof raw === "string" ? Number(raw) : Number.NaN;
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > RETRY_AFTER_MAX_S)
    throw new DomainError("validation_error", `--retry-after must be 1–${RETRY_AFTER_MAX_S} seconds`);
  return seconds;
}

function maintenance(enabled: boolean): AdminCommand<MaintenanceSetting> {
  return {
    decode: (request) => ({ enabled, retry_after_s: retryAfter(request), message: flag(request, "message") ?? "" }),
    audit: { atomic: true, target: (_seen, result) => ({ targetIds: [], details: result ?? {} }) },
    async run(call) {
      await setMaintenance(call.q, call.input);
      return { maintenance: call.input };
    },
  };
}

export function registerAdminCommands(svc: Pick<Service, "handleAdmin">, deps: AdminCommandsDeps): void {
  svc.handleAdmin("org create", orgCreate);
  svc.handleAdmin("org suspend", orgStatus("suspended"));
  svc.handleAdmin("org activate", orgStatus("active"));
  svc.handleAdmin("key create", keyCreate(deps));
  svc.handleAdmin("key revoke", keyRevoke);
  svc.handleAdmin("maintenance on", maintenance(true));
  svc.handleAdmin("maintenance off", maintenance(false));
}
