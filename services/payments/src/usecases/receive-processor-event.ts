/**
 * `POST /v1/processor-webhooks/stripe`: the card processor's events. No API key: the `Stripe-Signature` header is
 * checked over the exact bytes received with the deployment's endpoint secret by the processor's own library,
 * which also refuses a signed timestamp older than the tolerance. A verified event is recorded once, by the
 * processor's event id, and answered at once; the work it asks for runs afterwards in the worker
 * (usecases/processor-events.ts), so the processor never waits on the ledger. A redelivery is reported as a
 * duplicate and does nothing; a type this service does not use is acknowledged and recorded as ignored.
 *
 * Errors: processor_signature_invalid (bad or missing signature, wrong secret, old timestamp, altered body, not
 * an event), provider_not_configured (no STRIPE_WEBHOOK_SECRET: nothing can be verified).
 */
import { DomainError, schemas, unstorableStringError } from "@treasury/contracts";
import Stripe from "stripe";
import { z } from "zod";
import type { PaymentsDeps } from "./deps.ts";

/** The event types the worker acts on; every other type is acknowledged and ignored. */
export const HANDLED_EVENT_TYPES = new Set([
  "checkout.session.completed",
  "checkout.session.async_payment_succeeded",
  "checkout.session.expired",
  "checkout.session.async_payment_failed",
  "refund.created",
  "refund.updated",
  "refund.failed",
  "charge.refund.updated",
  "charge.refunded",
  "charge.dispute.created",
  "charge.dispute.closed",
]);

/** The envelope every processor event has (its `data.object` is read by the worker for the type it handles). */
const EventEnvelope = z.object({
  id: z.string().min(1).max(255),
  object: z.literal("event"),
  type: z.string().min(1).max(255),
  livemode: z.boolean(),
  data: z.object({ object: z.record(z.string(), z.unknown()) }),
});

type WebhookBody = z.output<typeof schemas.ProcessorWebhookBody>;

export interface WebhookSecrets {
  secret: string | undefined;
  toleranceSec: number;
}

function invalid(message: string): DomainError {
  return new DomainError("processor_signature_invalid", message, {
    hint: "Send the processor's event body unchanged with its Stripe-Signature header, signed with this deployment's endpoint secret (STRIPE_WEBHOOK_SECRET)",
  });
}

/** Verifies and parses; the signature is checked before anything of the body is trusted or stored. */
function verify(body: WebhookBody, secrets: WebhookSecrets): z.infer<typeof EventEnvelope> {
  if (secrets.secret === undefined) {
    throw new DomainError("provider_not_configured", "This deployment has no processor webhook secret configured", {
      hint: "Set STRIPE_WEBHOOK_SECRET on the payments service",
    });
  }
  if (body.signature === null) throw invalid("Missing Stripe-Signature header");
  let event: unknown;
  try {
    event = Stripe.webhooks.constructEvent(Buffer.from(body.payload_base64, "base64"), body.signature, secrets.secret, secrets.toleranceSec);
  } catch {
    // The library's message says which check failed; it names no secret, but the exact reason helps a forger more than an operator.
    throw invalid("The Stripe-Signature header does not verify for this body, secret and time");
  }
  const parsed = EventEnvelope.safeParse(event);
  if (!parsed.success) throw invalid("The signed body is not a processor event");
  const bad = unstorableStringError(parsed.data, "Event");
  if (bad !== undefined) throw invalid("The signed event holds strings that cannot be stored");
  return parsed.data;
}

/** A verified event as recorded: its id, whether it was a redelivery, and whether the worker acts on its type. */
export interface ReceivedEvent {
  eventId: string;
  duplicate: boolean;
  handled: boolean;
}

export async function receiveStripeWebhook(deps: PaymentsDeps, secrets: WebhookSecrets, body: WebhookBody): Promise<ReceivedEvent> {
  const event = verify(body, secrets);
  const handled = HANDLED_EVENT_TYPES.has(event.type);
  const fresh = await deps.processorEvents.insert({
    provider: "stripe",
    eventId: event.id,
    type: event.type,
    livemode: event.livemode,
    payload: event as unknown as Record<string, unknown>,
    status: handled ? "pending" : "ignored",
  });
  if (fresh && handled) deps.wakeProcessorWorker();
  return { eventId: event.id, duplicate: !fresh, handled };
}
