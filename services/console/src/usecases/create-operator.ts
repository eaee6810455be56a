/**
 * Creates an operator account (`admin operator create`). Errors: validation_error (the flag named),
 * operator_exists.
 */
import { DomainError } from "@treasury/contracts";
import { z } from "zod";
import { hashPassword, PASSWORD_LENGTH_MAX, PASSWORD_LENGTH_MIN } from "../domain/passwords.ts";
import { isRole, type Role } from "../domain/roles.ts";
import type { ConsoleDeps, Operator } from "./ports.ts";

const Email = z.string().trim().toLowerCase().max(320).pipe(z.email());

export function normalizeEmail(raw: string): string | undefined {
  const parsed = Email.safeParse(raw);
  return parsed.success ? parsed.data : undefined;
}

export interface NewOperator {
  email: string;
  role: Role;
  password: string;
}

/** Checks the flags as typed; each error names its flag. */
export function checkNewOperator(input: { email: string; role: string; password: string }): NewOperator {
  const email = normalizeEmail(input.email);
  if (email === undefined) throw new DomainError("validation_error", "--email must be an email address");
  if (!isRole(input.role)) throw new DomainError("validation_error", "--role must be viewer, reviewer or admin");
  const length = [...input.password].length;
  if (length < PASSWORD_LENGTH_MIN || length > PASSWORD_LENGTH_MAX) {
    throw new DomainError("validation_error", `--password-stdin: the password must be ${PASSWORD_LENGTH_MIN}–${PASSWORD_LENGTH_MAX} characters`);
  }
  return { email, role: input.role, password: input.password };
}

export async function createOperator(deps: Pick<ConsoleDeps, "operators" | "newId">, input: NewOperator): Promise<Operator> {
  const passwordHash = await hashPassword(input.password);
  const created = await deps.operators.insert({ id: deps.newId(), email: input.email, role: input.role, passwordHash });
  if (created === undefined) throw new DomainError("operator_exists", `An operator with the email ${input.email} exists`);
  return created;
}

/** An operator as answers show it: never the hash. */
export function presentOperator(o: Operator): Record<string, unknown> {
  return { id: o.id, email: o.email, role: o.role, created_at: o.createdAt.toISOString(), disabled_at: o.disabledAt?.toISOString() ?? null };
}
