/** The webhooks service's records as the use cases see them: endpoints (`we_…`) and deliveries (`whd_…`). */
import type { SignatureScheme } from "./signing.ts";

export const ORDERINGS = ["none", "per_endpoint"] as const;
export type Ordering = (typeof ORDERINGS)[number];

export interface EndpointRow {
  id: string;
  org_id: string;
  livemode: boolean;
  url: string;
  description: string | null;
  events: string[];
  is_active: boolean;
  /** `hmac_sha256` (v1, the endpoint's secret) or `ed25519` (v1a, the platform's keys in the JWKS). */
  signature_scheme: SignatureScheme;
  /** `per_endpoint`: deliveries go one at a time, in the events' stream order. */
  ordering: Ordering;
  /** Clear secrets: only on rows written before secrets were sealed, until the reseal pass seals them. */
  secret: string | null;
  previous_secret: string | null;
  /** The secrets sealed with the key `secret_key_id` names (usecases/secrets.ts). */
  secret_sealed: string | null;
  previous_secret_sealed: string | null;
  secret_key_id: string | null;
  previous_secret_expires_at: Date | null;
  secret_rotated_at: Date | null;
  created_at: Date;
}

/** What signing needs of an endpoint: its secrets, sealed or (on rows not resealed yet) clear. */
export type EndpointSecrets = Pick<
  EndpointRow,
  "id" | "secret" | "previous_secret" | "secret_sealed" | "previous_secret_sealed" | "previous_secret_expires_at"
>;

/** Both secrets sealed with one key. */
export interface SealedSecrets {
  secret_sealed: string;
  previous_secret_sealed: string | null;
  secret_key_id: string;
}

export const DELIVERY_STATUSES = ["pending", "retrying", "delivered", "failed"] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export interface DeliveryRow {
  id: string;
  org_id: string;
  livemode: boolean;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  status: DeliveryStatus;
  attempts: number;
  max_attempts: number;
  response_status: number | null;
  response_body: string | null;
  response_time_ms: number | null;
  next_retry_at: Date | null;
  lease_until: Date | null;
  created_at: Date;
  delivered_at: Date | null;
}
