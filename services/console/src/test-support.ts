/**
 * Shared setup of the console's integration tests: this file's database and prefix (libs/testing), the service
 * built in-process on an ephemeral port, a browser-like client that keeps cookies, and operator creation as the
 * admin CLI sends it (over real NATS, as the test superuser).
 */
import { adminOperation, rpcSubject, type RpcReply } from "@treasury/contracts";
import { rpcCall } from "@treasury/service-kit";
import { setupTestEnv, type TestEnv } from "@treasury/testing";
import { buildConsole, type ConsoleService } from "./service.ts";

const RPC_TIMEOUT_TEST_MS = 20_000;

export interface ConsoleHarness {
  env: TestEnv;
  svc: ConsoleService;
  baseUrl: string;
  admin(command: string, request: { flags?: Record<string, string | boolean>; reason?: string; actor?: string }): Promise<RpcReply>;
  createOperator(email: string, role: "viewer" | "reviewer" | "admin", password: string): Promise<void>;
  close(): Promise<void>;
}

export async function startConsole(opts: { env?: Record<string, string>; testEnv?: TestEnv } = {}): Promise<ConsoleHarness> {
  const env = opts.testEnv ?? (await setupTestEnv());
  const nc = await env.nats();
  const svc = await buildConsole(env.env("console", { CONSOLE_PORT: "0", CONSOLE_SECURE_COOKIES: "false", ...opts.env }));
  await svc.start();
  const admin: ConsoleHarness["admin"] = (command, request) =>
    rpcCall(nc, rpcSubject(env.prefix, "console", adminOperation(command)), { actor: "ops:alice", flags: {}, ...request }, { timeoutMs: RPC_TIMEOUT_TEST_MS });
  return {
    env,
    svc,
    baseUrl: `http://127.0.0.1:${svc.httpPort()}`,
    admin,
    createOperator: async (email, role, password) => {
      const reply = await admin("operator create", { flags: { email, role, password } });
      if (!reply.ok) throw new Error(`operator create failed: ${reply.error.code} ${reply.error.message}`);
    },
    close: async () => {
      await svc.stop();
      if (opts.testEnv === undefined) await env.cleanup();
    },
  };
}

/** A client that keeps the cookies the console sets, as a browser does (no redirects followed). */
export class Browser {
  readonly cookies = new Map<string, string>();
  constructor(private readonly baseUrl: string) {}

  async request(method: "GET" | "POST", path: string, form?: Record<string, string>): Promise<{ status: number; headers: Headers; text: string }> {
    const headers: Record<string, string> = {};
    if (this.cookies.size > 0) headers["cookie"] = [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
    if (form !== undefined) headers["content-type"] = "application/x-www-form-urlencoded";
    const res = await fetch(this.baseUrl + path, {
      method,
      headers,
      redirect: "manual",
      body: form === undefined ? null : new URLSearchParams(form).toString(),
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(";");
      const eq = pair?.indexOf("=") ?? -1;
      if (pair === undefined || eq < 0) continue;
      const name = pair.slice(0, eq);
      const value = pair.slice(eq + 1);
      if (value === "" || /max-age=0|expires=thu, 01 jan 1970/i.test(c)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return { status: res.status, headers: res.headers, text: await res.text() };
  }

  get(path: string) {
    return this.request("GET", path);
  }

  post(path: string, form: Record<string, string>) {
    return this.request("POST", path, form);
  }

  /** Signs in through the form; answers the sign-in POST's response. */
  async signIn(email: string, password: string) {
    const page = await this.get("/console/sign-in");
    return this.post("/console/sign-in", { _form: hiddenValue(page.text, "_form"), email, password });
  }
}

/** The value of a hidden form field in a page. */
export function hiddenValue(page: string, name: string): string {
  const m = new RegExp(`name="${name}" value="([^"]*)"`).exec(page);
  if (m?.[1] === undefined) throw new Error(`no ${name} field in the page`);
  return m[1];
}
