// Proves where a hosted page may send the buyer back: the body schemas admit https, and http on this machine only;
// live sessions admit https alone.
import { schemas } from "@treasury/contracts";
import { describe, expect, it } from "vitest";
import { liveReturnUrlProblem } from "./return-urls.ts";

const checkout = (url: string) => schemas.CreateCheckoutBody.safeParse({ participant_id: "creator_1", amount: 100, success_url: url, cancel_url: url });
const walletSession = (url: string) => schemas.CreateWalletSessionBody.safeParse({ owner_id: "buyer_1", success_url: url, cancel_url: url });
const messages = (r: ReturnType<typeof checkout> | ReturnType<typeof walletSession>) =>
  r.success ? [] : r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);

describe("success_url and cancel_url", () => {
  it("are accepted as https anywhere, and as http on localhost or 127.0.0.1 with any port", () => {
    for (const url of [
      "https://shop.example/ok?x=1",
      "https://shop.example:8443/ok",
      "http://localhost/ok",
      "http://localhost:3000/ok",
      "http://127.0.0.1:8080/c",
    ]) {
      expect(messages(checkout(url)), url).toEqual([]);
      expect(messages(walletSession(url)), url).toEqual([]);
    }
  });

  it("are refused with a precise message for a script, another scheme or http to any other host", () => {
    const refused = [
      "javascript:alert(document.cookie)",
      "JavaScript://shop.example/%0aalert(1)",
      "data:text/html,<script>alert(1)</script>",
      "vbscript:msgbox(1)",
      "ftp://shop.example/ok",
      "file:///etc/passwd",
      "http://shop.example/ok",
      "http://localhost.shop.example/ok",
      "http://127.0.0.2/ok",
      "http://[::1]:3000/ok",
    ];
    for (const url of refused) {
      for (const r of [checkout(url), walletSession(url)]) {
        expect(messages(r), url).toEqual([
          "success_url: must be an https URL (http://localhost or http://127.0.0.1 in sandbox only)",
          "cancel_url: must be an https URL (http://localhost or http://127.0.0.1 in sandbox only)",
        ]);
      }
    }
  });

  it("in live, only https: the local http form is refused, naming the field", () => {
    expect(liveReturnUrlProblem({ success_url: "https://shop.example/ok", cancel_url: "https://shop.example/no" }, true)).toBeUndefined();
    expect(liveReturnUrlProblem({}, true)).toBeUndefined();
    expect(liveReturnUrlProblem({ success_url: "http://localhost:3000/ok" }, false)).toBeUndefined();
    expect(liveReturnUrlProblem({ success_url: "https://shop.example/ok", cancel_url: "http://127.0.0.1:3000/no" }, true)).toEqual({
      path: "cancel_url",
      message: "must be an https URL in live mode (http://localhost and http://127.0.0.1 are for sandbox only)",
    });
    expect(liveReturnUrlProblem({ success_url: "http://localhost/ok" }, true)?.path).toBe("success_url");
  });
});
