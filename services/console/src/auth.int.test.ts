/**
 * Operators, sign-in, sessions, CSRF and lockout against a real PostgreSQL and NATS: the console built
 * in-process, its HTTP listener driven with fetch as a browser would (cookies kept, redirects not followed).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Browser, hiddenValue, startConsole, type ConsoleHarness } from "./test-support.ts";

const PASSWORD = "correct horse battery staple";
let h: ConsoleHarness;

beforeAll(async () => {
  h = await startConsole();
  await h.createOperator("Ada@Example.com", "reviewer", PASSWORD);
}, 120_000);

afterAll(async () => {
  await h?.close();
});

describe("operator create", () => {
  it("stores a scrypt hash, never the password, and records the command without it", async () => {
    // Proves the password travels only to be hashed: neither the operators table nor the audit row holds it.
    const [op] = await h.env.adminSql`select * from console.operators where email = 'ada@example.com'`;
    expect(op?.["role"]).toBe("reviewer");
    expect(String(op?.["password_hash"])).toMatch(/^scrypt\$17\$8\$1\$/);
    const audit = await h.env.adminSql`select * from console.audit_log where action = 'operator.create'`;
    expect(audit).toHaveLength(1);
    expect(audit[0]?.["actor"]).toBe("ops:alice");
    expect(JSON.stringify(audit)).not.toContain(PASSWORD);
    expect(audit[0]?.["details"]).toMatchObject({ email: "ada@example.com", role: "reviewer" });
  });

  it("refuses a second account for the same address, a short password and an unknown role", async () => {
    // Proves the owner checks the flags and names the one that is wrong.
    const dup = await h.admin("operator create", { flags: { email: "ADA@example.com", role: "viewer", password: PASSWORD } });
    expect(dup.ok ? "ok" : dup.error.code).toBe("operator_exists");
    const short = await h.admin("operator create", { flags: { email: "bob@example.com", role: "viewer", password: "short" } });
    expect(short.ok ? "ok" : short.error.message).toContain("--password-stdin");
    const role = await h.admin("operator create", { flags: { email: "bob@example.com", role: "root", password: PASSWORD } });
    expect(role.ok ? "ok" : role.error.message).toContain("--role");
  });
});

describe("sign-in", () => {
  it("sends a visitor without a session to the sign-in page", async () => {
    // Proves no page is served without a session.
    const res = await new Browser(h.baseUrl).get("/console/find?id=po_x");
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/console/sign-in");
  });

  it("signs in with HttpOnly SameSite=Strict cookies and a strict CSP, and signs out with the CSRF token only", async () => {
    // Proves the session cookie's flags, the page headers, and that sign-out needs the session's token.
    const b = new Browser(h.baseUrl);
    const res = await b.signIn("ada@example.com", PASSWORD);
    expect(res.status).toBe(303);
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith("console_session="));
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Strict/i);
    expect(cookie).toMatch(/Path=\//);
    const home = await b.get("/console");
    expect(home.status).toBe(200);
    expect(home.text).toContain("ada@example.com (reviewer)");
    expect(home.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(home.headers.get("content-security-policy")).not.toContain("unsafe-inline");
    const refused = await b.post("/console/sign-out", { _csrf: "forged" });
    expect(refused.status).toBe(403);
    expect((await b.get("/console")).status).toBe(200);
    const out = await b.post("/console/sign-out", { _csrf: hiddenValue(home.text, "_csrf") });
    expect(out.status).toBe(303);
    expect((await b.get("/console")).status).toBe(303);
  });

  it("refuses a sign-in form that did not come from the console", async () => {
    // Proves the sign-in POST needs the token of a form this browser was given (login CSRF).
    const b = new Browser(h.baseUrl);
    const res = await b.post("/console/sign-in", { email: "ada@example.com", password: PASSWORD, _form: "guessed" });
    expect(res.status).toBe(403);
    expect(b.cookies.has("console_session")).toBe(false);
  });

  it("issues a new session id at sign-in: a planted one is never signed in", async () => {
    // Proves session fixation fails: the id an attacker set before sign-in stays unauthenticated.
    const b = new Browser(h.baseUrl);
    const planted = "A".repeat(43);
    b.cookies.set("console_session", planted);
    await b.signIn("ada@example.com", PASSWORD);
    expect(b.cookies.get("console_session")).not.toBe(planted);
    const attacker = new Browser(h.baseUrl);
    attacker.cookies.set("console_session", planted);
    expect((await attacker.get("/console")).status).toBe(303);
    expect((await b.get("/console")).status).toBe(200);
  });

  it("ends a session after the idle timeout and after its absolute end", async () => {
    // Proves both expiries: the session row's times are moved into the past, as waiting would.
    const idle = new Browser(h.baseUrl);
    await idle.signIn("ada@example.com", PASSWORD);
    await h.env.adminSql`update console.sessions set last_seen_at = now() - interval '31 minutes'`;
    expect((await idle.get("/console")).status).toBe(303);
    const old = new Browser(h.baseUrl);
    await old.signIn("ada@example.com", PASSWORD);
    await h.env.adminSql`update console.sessions set expires_at = now() - interval '1 second'`;
    expect((await old.get("/console")).status).toBe(303);
  });
});

describe("lockout", () => {
  it("locks an address after 5 failed attempts, even for the right password, and says the same for unknown ones", async () => {
    // Proves the lockout: the sixth attempt is refused before the password is checked.
    await h.createOperator("eve@example.com", "viewer", PASSWORD);
    const b = new Browser(h.baseUrl);
    for (let i = 0; i < 5; i++) expect((await b.signIn("eve@example.com", "wrong password!")).status).toBe(401);
    const locked = await b.signIn("eve@example.com", PASSWORD);
    expect(locked.status).toBe(429);
    expect(locked.text).toContain("Too many failed sign-ins");
    expect(b.cookies.has("console_session")).toBe(false);
    const unknown = await b.signIn("nobody@example.com", PASSWORD);
    expect(unknown.status).toBe(401);
    expect(unknown.text).toContain("The email or password is wrong.");
    const [row] = await h.env.adminSql`select count(*)::int as n from console.login_attempts where email = 'eve@example.com' and not succeeded`;
    expect(row?.["n"]).toBe(5);
  }, 60_000);
});

describe("secure cookies", () => {
  it("names cookies __Host- and marks them Secure when served over https", async () => {
    // Proves the production cookie shape: __Host- prefix (Secure, Path=/, no Domain).
    const secure = await startConsole({ testEnv: h.env, env: { CONSOLE_SECURE_COOKIES: "true" } });
    try {
      const res = await fetch(`${secure.baseUrl}/console/sign-in`);
      const cookie = res.headers.getSetCookie()[0] ?? "";
      expect(cookie).toMatch(/^__Host-console_signin=/);
      expect(cookie).toMatch(/; Secure/i);
      expect(cookie).not.toMatch(/Domain=/i);
    } finally {
      await secure.close();
    }
  });
});
