// Proves risk alerts end to end on local servers: an email alert reaches an SMTP server started here (through
// nodemailer and RISK_SMTP_URL), a webhook alert reaches a local receiver, both fired by an evaluation under review
// and sent by the alert job after it committed, and `test` tells a delivered alert from one that was not.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";
import { waitFor } from "@treasury/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authFor, err, evaluationOf, newOrg, ok, startRisk, type RiskHarness } from "./test-support.ts";

interface Mail {
  from: string | undefined;
  to: string[];
  data: string;
}

let h: RiskHarness;
let smtp: SMTPServer;
let receiver: http.Server;
const mails: Mail[] = [];
const posts: Record<string, unknown>[] = [];

async function listening(server: { listen(port: number, host: string, cb: () => void): unknown }, address: () => AddressInfo): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return address().port;
}

beforeAll(async () => {
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    onData(stream, session, callback) {
      let data = "";
      stream.setEncoding("utf8");
      stream.on("data", (chunk: string) => (data += chunk));
      stream.on("end", () => {
        const from = session.envelope.mailFrom === false ? undefined : session.envelope.mailFrom.address;
        mails.push({ from, to: session.envelope.rcptTo.map((r) => r.address), data });
        callback();
      });
    },
  });
  const smtpPort = await listening(smtp, () => smtp.server.address() as AddressInfo);
  receiver = http.createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (body += c));
    req.on("end", () => {
      posts.push(JSON.parse(body) as Record<string, unknown>);
      res.writeHead(204).end();
    });
  });
  const hookPort = await listening(receiver, () => receiver.address() as AddressInfo);
  h = await startRisk({ env: { RISK_SMTP_URL: `smtp://127.0.0.1:${smtpPort}`, RISK_ALERT_FROM: "risk@treasury.test" } });
  hookUrl = `http://127.0.0.1:${hookPort}/alerts`;
});
afterAll(async () => {
  await h?.close();
  await new Promise<void>((r) => smtp?.close(() => r()));
  receiver?.closeAllConnections();
  await new Promise((r) => receiver?.close(r));
});

let hookUrl = "";

async function configure(orgId: string, body: Record<string, unknown>): Promise<string> {
  const reply = ok(await h.call("configureAlerts", authFor(orgId), { body: { action: "create", ...body } }));
  return (reply.body["alert_config"] as { id: string }).id;
}

describe("alerts", () => {
  it("emails and posts a review_required alert after the evaluation commits", async () => {
    const org = newOrg();
    ok(await h.call("createFraudPolicy", authFor(org), { body: { policy_type: "require_instrument", severity: "soft" } }));
    await configure(org, { alert_type: "review_required", channel: "email", recipients: ["risk-team@example.com"] });
    await configure(org, { alert_type: "review_required", channel: "webhook", webhook_url: hookUrl });
    // Above its threshold only: this one never fires for a 900-cent movement.
    await configure(org, { alert_type: "review_required", channel: "webhook", webhook_url: `${hookUrl}?big`, thresholds: { min_amount_cents: 1_000 } });
    const e = evaluationOf(await h.evaluate({ org_id: org, livemode: false, operation: "checkout", key: "checkout:cs_alert", amount: 900 }));
    expect(e.decision).toBe("review");

    await waitFor(
      async () => (await h.svc.sendAlerts()) === 0 && mails.some((m) => m.data.includes(e.id)) && posts.some((p) => JSON.stringify(p).includes(e.id)),
    );
    const mail = mails.find((m) => m.data.includes(e.id));
    expect(mail).toMatchObject({ from: "risk@treasury.test", to: ["risk-team@example.com"] });
    expect(mail?.data).toContain("review_required");
    expect(posts.filter((p) => JSON.stringify(p).includes(e.id))).toEqual([
      expect.objectContaining({
        alert_type: "review_required",
        org_id: org,
        test: false,
        evaluation: expect.objectContaining({ id: e.id, decision: "review" }),
      }),
    ]);
    const rows = await h.env.adminSql`select status, attempts from risk.alert_deliveries where org_id = ${org}`;
    expect(rows).toEqual([
      { status: "sent", attempts: 1 },
      { status: "sent", attempts: 1 },
    ]);
  });

  it("test sends at once and says whether it arrived; configs are checked and listed per tenant", async () => {
    const org = newOrg();
    const email = await configure(org, { alert_type: "breach_risk", channel: "email", recipients: ["ops@example.com"] });
    const before = mails.length;
    expect(ok(await h.call("configureAlerts", authFor(org), { body: { action: "test", config_id: email } })).body).toMatchObject({ delivered: true });
    expect(mails.slice(before)).toEqual([expect.objectContaining({ to: ["ops@example.com"], data: expect.stringContaining("test alert") })]);

    const closed = http.createServer();
    const closedPort = await listening(closed, () => closed.address() as AddressInfo);
    await new Promise((r) => closed.close(r));
    const dead = await configure(org, { alert_type: "breach_risk", channel: "webhook", webhook_url: `http://127.0.0.1:${closedPort}/gone` });
    expect(err(await h.call("configureAlerts", authFor(org), { body: { action: "test", config_id: dead } })).code).toBe("alert_delivery_failed");

    const missing = err(await h.call("configureAlerts", authFor(org), { body: { action: "create", alert_type: "breach_risk", channel: "webhook" } }));
    expect(missing.details).toEqual([{ path: "webhook_url", message: "is required for the webhook channel" }]);
    const listed = ok(await h.call("configureAlerts", authFor(org), { body: { action: "list" } })).body;
    expect(listed["total"]).toBe(2);
    expect(ok(await h.call("configureAlerts", authFor(org, true), { body: { action: "list" } })).body["total"]).toBe(0);
    expect(err(await h.call("configureAlerts", authFor(org, true), { body: { action: "test", config_id: email } })).code).toBe("alert_config_not_found");
  });
});
