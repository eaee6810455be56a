/**
 * Where a hosted page (checkout, wallet) may send its buyer back. The body schemas (libs/contracts) admit https
 * anywhere and, for a developer's own machine, http on localhost or 127.0.0.1; a live session is paid by real
 * buyers, whose browsers must never be sent over plain http, so it admits https alone.
 */

export interface ReturnUrls {
  success_url?: string | undefined;
  cancel_url?: string | undefined;
}

/** The first return URL a session of this environment may not use, with why; undefined when all are fine. */
export function liveReturnUrlProblem(urls: ReturnUrls, livemode: boolean): { path: "success_url" | "cancel_url"; message: string } | undefined {
  if (!livemode) return undefined;
  for (const path of ["success_url", "cancel_url"] as const) {
    const url = urls[path];
    if (url !== undefined && new URL(url).protocol !== "https:") {
      return { path, message: "must be an https URL in live mode (http://localhost and http://127.0.0.1 are for sandbox only)" };
    }
  }
  return undefined;
}
