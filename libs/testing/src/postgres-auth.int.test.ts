// Proves a private PostgreSQL started with a superuser password (the dev stack's) trusts no local user: a connection
// without the password is refused over TCP and over the Unix socket, whether the cluster is new or was made earlier
// without a password; the password admits, and the data and socket folders are their owner's alone.
import { rmSync, statSync } from "node:fs";
import { join } from "node:path";
import postgres from "postgres";
import { afterAll, describe, expect, it } from "vitest";
import { freePort, makeScratchDir, startPostgres, type PostgresServer } from "./servers.ts";

const scratch = makeScratchDir("pg-auth-");
const running: PostgresServer[] = [];

afterAll(async () => {
  for (const pg of running) await pg.stop();
  rmSync(scratch, { recursive: true, force: true });
});

interface Cluster {
  dataDir: string;
  socketDir: string;
  port: number;
}

async function cluster(name: string): Promise<Cluster> {
  return { dataDir: join(scratch, name), socketDir: join(scratch, `${name}-socket`), port: await freePort() };
}

async function start(c: Cluster, superuserPassword?: string): Promise<PostgresServer> {
  const pg = await startPostgres({
    ...c,
    maxConnections: 20,
    fsync: false,
    ...(superuserPassword === undefined ? {} : { superuserPassword }),
  });
  running.push(pg);
  return pg;
}

/** What `select 1` as the superuser answers: "ok", or the refusal's SQLSTATE. */
async function probe(opts: postgres.Options<Record<string, postgres.PostgresType>>): Promise<string> {
  const sql = postgres({ user: "postgres", database: "postgres", max: 1, connect_timeout: 10, onnotice: () => {}, ...opts });
  try {
    await sql`select 1`;
    return "ok";
  } catch (e) {
    return String((e as { code?: unknown }).code);
  } finally {
    await sql.end({ timeout: 1 });
  }
}

async function expectPasswordOnly(c: Cluster, pg: PostgresServer, password: string): Promise<void> {
  const socket = { path: join(c.socketDir, `.s.PGSQL.${c.port}`) };
  const tcp = { host: "127.0.0.1", port: c.port };
  expect(await probe(tcp)).toBe("28P01");
  expect(await probe(socket)).toBe("28P01");
  expect(await probe({ ...tcp, password: `${password}x` })).toBe("28P01");
  expect(await probe({ ...socket, password })).toBe("ok");
  expect(await probe({ ...tcp, password })).toBe("ok");
  expect(new URL(pg.url).password).toBe(password);
  expect(statSync(c.dataDir).mode & 0o777).toBe(0o700);
  expect(statSync(c.socketDir).mode & 0o777).toBe(0o700);
}

describe("a private PostgreSQL with a superuser password", () => {
  it("refuses connections without the password on a new cluster", async () => {
    const c = await cluster("new");
    const pg = await start(c, "first-secret");
    await expectPasswordOnly(c, pg, "first-secret");
  });

  it("refuses connections without the password on a cluster made before it had one", async () => {
    const c = await cluster("earlier");
    const trusting = await start(c);
    // The starting point: a cluster that trusts local connections, as the dev stack's did.
    expect(await probe({ host: "127.0.0.1", port: c.port })).toBe("ok");
    await trusting.stop();
    const pg = await start(c, "later-secret");
    await expectPasswordOnly(c, pg, "later-secret");
  });
});
