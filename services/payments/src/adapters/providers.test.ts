// Proves the checkout providers' guards with the real processor client against a loopback HTTP server: without
// credentials the stripe provider refuses before anything is asked, with a live-mode key a sandbox checkout never
// reaches the processor while a live one does, and with a test-mode key a live checkout never reaches it.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DomainError } from "@treasury/contracts";
import { isLiveProcessorKey, stripeProvider, type HostedSessionInput } from "./providers.ts";
import { stripeClient } from "./stripe.ts";

const requests: string[] = [];
const server = createServer((req, res) => {
  requests.push(`${req.method ?? ""} ${req.url ?? ""}`);
  req.resume();
  req.on("end", () => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ id: "cs_live_1", object: "checkout.session", url: "https://checkout.test/c/pay/cs_live_1" }));
  });
});
let base = "";
beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

const input = (livemode: boolean): HostedSessionInput => ({
  sessionId: "3f1c2a7e-1111-4e2b-9c55-0a1b2c3d4e5f",
  amount: 1_000,
  currency: "USD",
  productName: "Album",
  successUrl: "https://shop.example/ok",
  cancelUrl: "https://shop.example/cancel",
  hostedUrl: "https://alt.example/v1/checkout/x",
  livemode,
  expiresAt: new Date(Date.now() + 3_600_000),
  metadata: { checkout_session_id: "3f1c2a7e-1111-4e2b-9c55-0a1b2c3d4e5f" },
});

const codeOf = async (p: Promise<unknown>) => {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  return e instanceof DomainError ? e.code : e;
};

describe("stripe provider", () => {
  it("tells live-mode keys from test-mode ones", () => {
    expect([isLiveProcessorKey("sk_live_abc"), isLiveProcessorKey("rk_live_abc"), isLiveProcessorKey("sk_test_abc"), isLiveProcessorKey("live")]).toEqual([
      true,
      true,
      false,
      false,
    ]);
  });

  it("without credentials refuses with provider_not_configured and asks nothing", async () => {
    const provider = stripeProvider(undefined, { liveAccount: false });
    expect(() => provider.assertConfigured(true)).toThrow(DomainError);
    expect(await codeOf(provider.createHostedSession(input(true)))).toBe("provider_not_configured");
    expect(requests).toEqual([]);
  });

  it("with a live-mode key, a sandbox checkout never reaches the processor and a live one does", async () => {
    const client = stripeClient({ secretKey: "sk_live_deployment_key", apiBase: base, timeoutMs: 2_000, maxNetworkRetries: 0 });
    const provider = stripeProvider(client, { liveAccount: true });
    expect(await codeOf(provider.createHostedSession(input(false)))).toBe("provider_not_configured");
    expect(requests).toEqual([]);
    expect(await provider.createHostedSession(input(true))).toEqual({ checkoutUrl: "https://checkout.test/c/pay/cs_live_1", paymentId: "cs_live_1" });
    expect(requests).toEqual(["POST /v1/checkout/sessions"]);
  });

  it("with a test-mode key, a live checkout is refused before anything is asked, and a sandbox one reaches the processor", async () => {
    // Proves a test-mode key (whose test cards anyone can pay with) never takes a live payment.
    requests.length = 0;
    for (const key of ["sk_test_deployment_key", "rk_test_deployment_key"]) {
      const client = stripeClient({ secretKey: key, apiBase: base, timeoutMs: 2_000, maxNetworkRetries: 0 });
      const provider = stripeProvider(client, { liveAccount: isLiveProcessorKey(key) });
      const refused = (() => {
        try {
          provider.assertConfigured(true);
          return "accepted";
        } catch (e) {
          return e instanceof DomainError ? e.code : e;
        }
      })();
      expect(refused, key).toBe("provider_not_configured");
      expect(await codeOf(provider.createHostedSession(input(true))), key).toBe("provider_not_configured");
      expect(requests, key).toEqual([]);
      expect(() => provider.assertConfigured(false)).not.toThrow();
    }
    const sandbox = stripeProvider(stripeClient({ secretKey: "sk_test_deployment_key", apiBase: base, timeoutMs: 2_000, maxNetworkRetries: 0 }), {
      liveAccount: false,
    });
    expect((await sandbox.createHostedSession(input(false))).paymentId).toBe("cs_live_1");
    expect(requests).toEqual(["POST /v1/checkout/sessions"]);
  });
});
