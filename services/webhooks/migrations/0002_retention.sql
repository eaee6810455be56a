-- The retention sweep finds finished deliveries by age (WEBHOOK_RETENTION_DAYS).
create index deliveries_finished_idx on deliveries (updated_at) where status in ('delivered', 'failed');
