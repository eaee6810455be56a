/** Per-org fail modes (migrations/0002_fail_modes.sql): the stored ones over the defaults. */
import { schemas, type Tenant } from "@treasury/contracts";
import type { Sql, Tx } from "@treasury/service-kit";
import { sharedPerTurn } from "./turn-reads.ts";
import type { FailModeReader, FailModes } from "../usecases/ports.ts";

async function read(q: Sql | Tx, tenant: Tenant): Promise<FailModes> {
  const rows = await q<{ operation: keyof FailModes; mode: FailModes[keyof FailModes] }[]>`
    select operation, mode from risk.fail_modes where org_id = ${tenant.orgId} and livemode = ${tenant.livemode}`;
  const modes: FailModes = { ...schemas.DEFAULT_RISK_FAIL_MODES };
  for (const r of rows) modes[r.operation] = r.mode;
  return modes;
}

export function pgFailModeReader(sql: Sql): FailModeReader {
  return { get: sharedPerTurn((tenant) => read(sql, tenant)) };
}

/** Sets one operation's mode in the caller's transaction (the admin command's, with its audit row); answers them all. */
export async function setFailMode(q: Tx, tenant: Tenant, operation: schemas.MoneyRiskOperation, mode: schemas.RiskFailMode): Promise<FailModes> {
  await q`
    insert into risk.fail_modes (org_id, livemode, operation, mode) values (${tenant.orgId}, ${tenant.livemode}, ${operation}, ${mode})
    on conflict (org_id, livemode, operation) do update set mode = excluded.mode, updated_at = now()`;
  return read(q, tenant);
}

export const readFailModes = read;
