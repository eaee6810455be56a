// Proves serviceDatabaseUrl keeps host, port and database and swaps in the service's role and the password given, never one derived from the role.
import { describe, expect, it } from "vitest";
import { serviceDatabaseUrl } from "./db.ts";

describe("serviceDatabaseUrl", () => {
  it("uses the service role without a password under trust auth", () => {
    expect(serviceDatabaseUrl("postgres://postgres@127.0.0.1:5432/treasury?sslmode=disable", "ledger")).toBe(
      "postgres://ledger_svc@127.0.0.1:5432/treasury?sslmode=disable",
    );
  });

  it("takes the role's password from the caller and never derives one from the role or the admin URL", () => {
    expect(serviceDatabaseUrl("postgres://admin:s3cret@db:6543/app", "payments")).toBe("postgres://payments_svc@db:6543/app");
    expect(serviceDatabaseUrl("postgres://admin:s3cret@db:6543/app", "payments", "gen/er@ted")).toBe("postgres://payments_svc:gen%2Fer%40ted@db:6543/app");
  });
});
