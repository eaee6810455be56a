/** What the gateway forwards to payments for the card processor's webhooks; not a public request body. */
import { z } from "zod";

/** What the gateway forwards for a route with `rawBody`: the body's exact bytes and the signature header. */
export const ProcessorWebhookBody = z.object({ payload_base64: z.string().max(1_000_000), signature: z.string().max(10_000).nullable() });
