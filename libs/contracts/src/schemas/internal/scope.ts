/**
 * The caller's org and environment, carried in the body of the requests between services that name them
 * (transaction record, checkout sale, sale summary, processor refunds), so that the answering service reads and
 * writes only that tenant's rows.
 */
import { z } from "zod";

export const InternalScope = { org_id: z.string().min(1).max(100), livemode: z.boolean() };
