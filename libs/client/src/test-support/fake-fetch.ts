/** A scripted `fetch` for the client's unit tests: answers in order, and remembers every request it was sent. */

export interface SentRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: Record<string, unknown> | undefined;
}

export type Scripted = { status: number; body?: unknown; headers?: Record<string, string> } | "network_error";

export function fakeFetch(answers: Scripted[] | ((req: SentRequest, n: number) => Scripted)) {
  const sent: SentRequest[] = [];
  const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const raw = init?.body;
    const req: SentRequest = {
      url: String(input),
      method: init?.method ?? "GET",
      headers: Object.fromEntries(new Headers(init?.headers).entries()),
      body: typeof raw === "string" ? (JSON.parse(raw) as Record<string, unknown>) : undefined,
    };
    sent.push(req);
    const answer = typeof answers === "function" ? answers(req, sent.length) : answers[sent.length - 1];
    if (answer === undefined) throw new Error(`no answer scripted for request ${sent.length}`);
    if (answer === "network_error") throw new TypeError("fetch failed");
    return new Response(JSON.stringify(answer.body ?? { success: answer.status < 400, request_id: `req_${sent.length}` }), {
      status: answer.status,
      headers: { "content-type": "application/json", ...answer.headers },
    });
  };
  return { fetch: fetch as typeof globalThis.fetch, sent };
}

export function errorBody(code: string, extra: Record<string, unknown> = {}) {
  return { success: false, error: code, error_code: code, request_id: "req_e", ...extra };
}

/** A sleep that records the waits asked for and returns at once. */
export function recordingSleep() {
  const waits: number[] = [];
  return { waits, sleep: (ms: number) => (waits.push(ms), Promise.resolve()) };
}
