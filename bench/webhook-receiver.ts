/**
 * A webhook receiver on 127.0.0.1 for fault runs: answers 200 to every delivery, checks its Standard Webhooks
 * signature with the endpoint's secret, and records which delivery id (`webhook-id`) brought which event, so a run
 * can tell that every event arrived and that its redeliveries kept one id.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";

export class WebhookReceiver {
  /** Event id → the delivery ids it arrived with (one, however often it came). */
  readonly deliveryIds = new Map<string, Set<string>>();
  received = 0;
  badSignatures = 0;
  private verifier: Webhook | undefined;

  private constructor(private readonly server: http.Server) {}

  static async start(): Promise<WebhookReceiver> {
    const server = http.createServer();
    const receiver = new WebhookReceiver(server);
    server.on("request", (req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        receiver.record(Buffer.concat(chunks).toString("utf8"), req.headers);
        res.writeHead(200, { "content-type": "text/plain" }).end("ok");
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  /** The endpoint's secret, once created: signatures are checked from then on. */
  useSecret(secret: string): void {
    this.verifier = new Webhook(secret);
  }

  private record(body: string, headers: http.IncomingHttpHeaders): void {
    this.received += 1;
    const deliveryId = String(headers["webhook-id"] ?? "");
    let eventId = "";
    try {
      eventId = String((JSON.parse(body) as Record<string, unknown>)["id"] ?? "");
      this.verifier?.verify(body, {
        "webhook-id": deliveryId,
        "webhook-timestamp": String(headers["webhook-timestamp"] ?? ""),
        "webhook-signature": String(headers["webhook-signature"] ?? ""),
      });
    } catch {
      this.badSignatures += 1;
    }
    let ids = this.deliveryIds.get(eventId);
    if (ids === undefined) this.deliveryIds.set(eventId, (ids = new Set()));
    ids.add(deliveryId);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
