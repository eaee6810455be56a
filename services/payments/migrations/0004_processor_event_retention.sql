-- Finished processor events are deleted once past the retention period (usecases/prune-processor-events.ts);
-- this index finds them without reading the pending ones or the whole table.
create index processor_events_finished_idx on processor_events (processed_at) where status <> 'pending';
