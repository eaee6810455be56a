/**
 * Async iteration over paged lists (docs/api.md, Paging): `limit`/`offset` lists answer `{<plural>, total, limit,
 * offset}`; transactions answer `page`/`per_page` with `pagination: {total, page, per_page, total_pages}`. The
 * iterator asks for the next page only when the previous one is used up, and stops at the total.
 */
import type { ApiResponse } from "./transport.ts";

export type PagingStyle = "offset" | "page";

/** The fields of a page that describe the page, not its items. */
const PAGE_FIELDS = new Set(["success", "request_id", "total", "limit", "offset", "count", "pagination", "idempotent"]);

/** A bound on pages per iteration, so an answer whose total never shrinks cannot make the loop endless. */
export const PAGES_MAX = 100_000;

/** The list a page carries: its one array under a name other than the page fields. */
export function itemsOf(page: ApiResponse): unknown[] {
  const arrays = Object.entries(page).filter(([k, v]) => !PAGE_FIELDS.has(k) && Array.isArray(v));
  if (arrays.length !== 1) throw new TypeError(`a page carries ${arrays.length} lists (${arrays.map(([k]) => k).join(", ")}); iterate it by hand`);
  return arrays[0]![1] as unknown[];
}

async function* byOffset<T>(fetchPage: (query: Record<string, unknown>) => Promise<ApiResponse>, query: Record<string, unknown>): AsyncGenerator<T> {
  let offset = typeof query["offset"] === "number" ? query["offset"] : 0;
  for (let pages = 0; pages < PAGES_MAX; pages++) {
    const page = await fetchPage({ ...query, offset });
    const items = itemsOf(page) as T[];
    yield* items;
    offset += items.length;
    const total = typeof page["total"] === "number" ? page["total"] : undefined;
    if (items.length === 0 || (total !== undefined && offset >= total)) return;
  }
}

async function* byPage<T>(fetchPage: (query: Record<string, unknown>) => Promise<ApiResponse>, query: Record<string, unknown>): AsyncGenerator<T> {
  let number = typeof query["page"] === "number" ? query["page"] : 1;
  for (let pages = 0; pages < PAGES_MAX; pages++, number++) {
    const page = await fetchPage({ ...query, page: number });
    const items = itemsOf(page) as T[];
    yield* items;
    const info = page["pagination"] as { total_pages?: number } | undefined;
    if (items.length === 0 || info?.total_pages === undefined || number >= info.total_pages) return;
  }
}

/** Every item of a list, page after page, from the query's own offset (or page) on. */
export function iterate<T>(
  style: PagingStyle,
  fetchPage: (query: Record<string, unknown>) => Promise<ApiResponse>,
  query: Record<string, unknown> = {},
): AsyncGenerator<T> {
  return style === "offset" ? byOffset<T>(fetchPage, query) : byPage<T>(fetchPage, query);
}
