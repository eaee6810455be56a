/** Orgs, API keys and maintenance mode: the gateway's own tables, changed in one transaction with their audit row. */
import { createApiKey, createOrg, parseScopes, revokeApiKey, setMaintenance, setOrgStatus } from "../../services/gateway/src/admin.ts";
import type { Commands } from "./command.ts";
import { environmentOf, need, type Q } from "./context.ts";

const RETRY_AFTER_DEFAULT_S = 60;
const RETRY_AFTER_MAX_S = 86_400;

function field(result: unknown, key: string): string | undefined {
  const v = (result as Record<string, unknown> | undefined)?.[key];
  return typeof v === "string" ? v : undefined;
}

async function keyOwner(q: Q, keyId: string | undefined): Promise<{ org_id: string; livemode: boolean } | undefined> {
  if (keyId === undefined) return undefined;
  const [row] = await q<{ org_id: string; livemode: boolean }[]>`select org_id, livemode from gateway.api_keys where id = ${keyId}`;
  return row;
}

function orgStatus(status: "active" | "suspended"): Commands[string] {
  return {
    usage: `org ${status === "active" ? "activate" : "suspend"} --org ID [--reason TEXT]`,
    audit: {
      action: status === "active" ? "org.activate" : "org.suspend",
      atomic: true,
      target: (ctx) => ({ orgId: ctx.values.org ?? null, targetIds: ctx.values.org === undefined ? [] : [ctx.values.org] }),
    },
    async run(ctx) {
      const org = need(ctx.values.org, "--org");
      await setOrgStatus(ctx.q, org, status);
      return { org_id: org, status };
    },
  };
}

function maintenance(enabled: boolean): Commands[string] {
  return {
    usage: enabled ? "maintenance on [--retry-after SECONDS] [--message TEXT] [--reason TEXT]" : "maintenance off [--reason TEXT]",
    audit: {
      action: enabled ? "maintenance.on" : "maintenance.off",
      atomic: true,
      target: (_ctx, _q, result) => ({ targetIds: [], details: (result as Record<string, unknown> | undefined) ?? {} }),
    },
    async run(ctx) {
      const retryAfter = Number(ctx.values["retry-after"] ?? RETRY_AFTER_DEFAULT_S);
      if (!Number.isInteger(retryAfter) || retryAfter < 1 || retryAfter > RETRY_AFTER_MAX_S)
        throw new Error(`--retry-after must be 1–${RETRY_AFTER_MAX_S} seconds`);
      const setting = { enabled, retry_after_s: retryAfter, message: ctx.values.message ?? "" };
      await setMaintenance(ctx.q, setting);
      return { maintenance: setting };
    },
  };
}

export const gatewayCommands: Commands = {
  "org create": {
    usage: "org create --name NAME [--reason TEXT]   → {org_id}",
    audit: {
      action: "org.create",
      atomic: true,
      target: (ctx, _q, result) => {
        const org = field(result, "org_id");
        return { orgId: org ?? null, targetIds: org === undefined ? [] : [org], details: { name: ctx.values.name ?? null } };
      },
    },
    run: (ctx) => createOrg(ctx.q, { name: need(ctx.values.name, "--name") }),
  },
  "org suspend": orgStatus("suspended"),
  "org activate": orgStatus("active"),
  "key create": {
    usage: "key create --org ID --env test|live [--scopes read,payments] [--force-unverified] [--reason TEXT]   → {api_key, key_id}",
    audit: {
      action: "key.create",
      atomic: true,
      // The key itself is shown once, to the operator, and never recorded: only its id.
      target: (ctx, _q, result) => {
        const keyId = field(result, "key_id");
        const org = ctx.values.org;
        return {
          orgId: org ?? null,
          livemode: ctx.values.env === "live" ? true : ctx.values.env === "test" ? false : null,
          targetIds: [org, keyId].filter((x): x is string => x !== undefined),
          details: { scopes: ctx.values.scopes ?? null, force_unverified: ctx.values["force-unverified"] === true },
        };
      },
    },
    run(ctx) {
      const { livemode } = environmentOf(ctx.values);
      return createApiKey(ctx.q, {
        orgId: need(ctx.values.org, "--org"),
        environment: livemode ? "live" : "sandbox",
        scopes: parseScopes(ctx.values.scopes),
        forceUnverified: ctx.values["force-unverified"] === true,
      });
    },
  },
  "key revoke": {
    usage: "key revoke --key-id ID [--reason TEXT]",
    audit: {
      action: "key.revoke",
      atomic: true,
      target: async (ctx, q) => {
        const keyId = ctx.values["key-id"];
        const owner = await keyOwner(q, keyId);
        return {
          orgId: owner?.org_id ?? null,
          livemode: owner?.livemode ?? null,
          targetIds: [keyId, owner?.org_id].filter((x): x is string => x !== undefined),
        };
      },
    },
    async run(ctx) {
      const keyId = need(ctx.values["key-id"], "--key-id");
      await revokeApiKey(ctx.q, keyId);
      return { key_id: keyId, revoked: true };
    },
  },
  "maintenance on": maintenance(true),
  "maintenance off": maintenance(false),
};
