/**
 * A command a benchmark waits for leaves the event loop free: keep-alive sockets of the load generator stay
 * usable across it (the "other side closed" failures after a pgbench sweep), and a failed command says why.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Pool } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { runCommand } from "./command.ts";

let server: Server | undefined;
let pool: Pool | undefined;
afterEach(async () => {
  await pool?.close();
  pool = undefined;
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r) ?? r(undefined));
  server = undefined;
});

/** Node's -e program that exits after `ms`. */
const waitMs = (ms: number) => [process.execPath, ["-e", `setTimeout(() => {}, ${ms})`]] as const;

describe("runCommand", () => {
  it("keeps a keep-alive pool usable across a command that outlasts the server's keep-alive timeout", async () => {
    // The gateway's shape at a smaller scale: the server closes a socket idle for its keep-alive timeout (3 s,
    // hinted as timeout=3) and the benches' pool (undici, pipelining 1) would drop it itself after 1 s, if its event
    // loop ran. A command holding the loop for 4 s left every socket open in the pool and closed by the server.
    let opened = 0;
    server = createServer((_req, res) => {
      // Held briefly, so that the burst opens several sockets.
      setTimeout(() => res.writeHead(200, { "content-type": "application/json" }).end("{}"), 20);
    });
    server.keepAliveTimeout = 3000;
    server.on("connection", () => (opened += 1));
    await new Promise<void>((r) => server?.listen(0, "127.0.0.1", r));
    pool = new Pool(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { connections: 8, pipelining: 1 });
    const burst = () =>
      Promise.allSettled(
        Array.from({ length: 8 }, async () => {
          const r = await pool!.request({ method: "POST", path: "/x", headers: { "content-type": "application/json" }, body: "{}" });
          await r.body.dump();
          return r.statusCode;
        }),
      );
    const failures = (rs: PromiseSettledResult<number>[]) => rs.flatMap((r) => (r.status === "rejected" ? [String(r.reason)] : []));

    expect(failures(await burst())).toEqual([]);
    expect(opened).toBeGreaterThan(1);
    const [cmd, args] = waitMs(4000);
    await runCommand(cmd, args, { timeoutMs: 30_000 });
    expect(failures(await burst())).toEqual([]);
  });

  it("answers the command's stdout then its stderr", async () => {
    const out = await runCommand(process.execPath, ["-e", "process.stdout.write('tps = 12.5\\n'); process.stderr.write('done\\n')"], { timeoutMs: 30_000 });
    expect(out).toBe("tps = 12.5\ndone\n");
  });

  it("rejects a command that fails, with its exit status and stderr", async () => {
    await expect(runCommand(process.execPath, ["-e", "console.error('no such table'); process.exit(3)"], { timeoutMs: 30_000 })).rejects.toThrow(
      /failed \(exit status 3\): no such table/,
    );
  });

  it("kills a command that outlasts its timeout and says so", async () => {
    const [cmd, args] = waitMs(30_000);
    const t0 = performance.now();
    await expect(runCommand(cmd, args, { timeoutMs: 300 })).rejects.toThrow(/killed after 300 ms/);
    expect(performance.now() - t0).toBeLessThan(10_000);
  });

  it("rejects a command that does not exist", async () => {
    await expect(runCommand("treasury-no-such-command", [], { timeoutMs: 1000 })).rejects.toThrow(/ENOENT/);
  });
});
