-- The request id and trace context (W3C traceparent/tracestate) of the event each delivery carries, taken by the
-- fan-out from the event's message: every attempt's HTTP request continues that trace and sends its traceparent.
-- A constant default: existing rows get an empty object without a table rewrite, and their attempts start a trace.
alter table deliveries add column trace_headers jsonb not null default '{}';
