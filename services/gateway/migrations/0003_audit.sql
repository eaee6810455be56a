-- Operator actions now live in every service's own audit_log, a table of the service kit (libs/service-kit
-- migrate.ts) created before a service's migrations run; this migration created gateway.audit_log with the same
-- columns, indexes and append-only triggers before the kit did, and is kept so deployments that applied it match.
select 1;
