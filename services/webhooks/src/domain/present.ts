/** Wire shapes of endpoints and deliveries (docs/api.md, Webhooks). */
import type { Ordering } from "./records.ts";
import type { SignatureScheme } from "./signing.ts";

export interface EndpointView {
  id: string;
  url: string;
  description: string | null;
  events: string[];
  is_active: boolean;
  signature_scheme: SignatureScheme;
  ordering: Ordering;
  created_at: string;
  secret_rotated_at: string | null;
}

export interface DeliveryView {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  status: "pending" | "retrying" | "delivered" | "failed";
  attempts: number;
  max_attempts: number;
  response_status: number | null;
  response_body: string | null;
  response_time_ms: number | null;
  next_retry_at: string | null;
  created_at: string;
  delivered_at: string | null;
}

const iso = (d: Date | null): string | null => (d === null ? null : d.toISOString());

export function presentEndpoint(e: {
  id: string;
  url: string;
  description: string | null;
  events: string[];
  is_active: boolean;
  signature_scheme: SignatureScheme;
  ordering: Ordering;
  created_at: Date;
  secret_rotated_at: Date | null;
}): EndpointView {
  return {
    id: e.id,
    url: e.url,
    description: e.description,
    events: e.events,
    is_active: e.is_active,
    signature_scheme: e.signature_scheme,
    ordering: e.ordering,
    created_at: e.created_at.toISOString(),
    secret_rotated_at: iso(e.secret_rotated_at),
  };
}

export function presentDelivery(d: {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  status: DeliveryView["status"];
  attempts: number;
  max_attempts: number;
  response_status: number | null;
  response_body: string | null;
  response_time_ms: number | null;
  next_retry_at: Date | null;
  created_at: Date;
  delivered_at: Date | null;
}): DeliveryView {
  const finished = d.status === "delivered" || d.status === "failed";
  return {
    id: d.id,
    endpoint_id: d.endpoint_id,
    event_id: d.event_id,
    event_type: d.event_type,
    status: d.status,
    attempts: d.attempts,
    max_attempts: d.max_attempts,
    response_status: d.response_status,
    response_body: d.response_body,
    response_time_ms: d.response_time_ms,
    next_retry_at: finished ? null : iso(d.next_retry_at),
    created_at: d.created_at.toISOString(),
    delivered_at: iso(d.delivered_at),
  };
}
