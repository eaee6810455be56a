// Proves serviceDatabaseUrl keeps host, port and database and swaps in the service's role (and dev password).
import { describe, expect, it } from "vitest";
import { serviceDatabaseUrl } from "./db.ts";

describe("serviceDatabaseUrl", () => {
  it("uses the service role without a password under trust auth", () => {
    expect(serviceDatabaseUrl("postgres://postgres@127.0.0.1:5432/treasury?sslmode=disable", "ledger")).toBe(
      "postgres://ledger_svc@127.0.0.1:5432/treasury?sslmode=disable",
    );
  });

  it("gives the role its conventional password when the admin URL has one", () => {
    expect(serviceDatabaseUrl("postgres://admin:s3cret@db:6543/app", "payments")).toBe("postgres://payments_svc:payments_svc@db:6543/app");
  });
});
