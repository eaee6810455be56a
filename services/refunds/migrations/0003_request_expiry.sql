-- Refund request expiry: a request nobody reviewed (`created`) is cancelled by the service itself once expires_at
-- passes on the request's own clock (live: real time; sandbox: the org's test clock). expires_at is fixed when the
-- request is created (the org's now plus REFUNDS_REQUEST_TTL_DAYS); cancelled_by says who cancelled a cancelled
-- request: `api` (POST /v1/refund-requests/{id}/cancel) or `schedule` (it expired, cancellation_reason `expired`).
alter table refund_requests
  add column expires_at timestamptz,
  add column cancelled_by text check (cancelled_by in ('api', 'schedule'));
-- Requests made before expiry existed get the default time to live (30 days from their creation); a request that
-- old is cancelled by the first pass after this release.
update refund_requests set expires_at = created_at + interval '30 days';
update refund_requests set cancelled_by = 'api' where status = 'cancelled';
alter table refund_requests
  alter column expires_at set not null,
  add constraint refund_requests_cancelled_has_actor check (status <> 'cancelled' or cancelled_by is not null);
-- The expiry pass reads only requests still waiting for a review, earliest deadline first.
create index refund_requests_expiry_idx on refund_requests (expires_at, id) where status = 'created';
