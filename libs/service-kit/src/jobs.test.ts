// Proves a reconciler step drives every row, logs each failure under the row's id field with its message only
// (never the error object, which may carry a client's request headers), and counts only the rows driven.
import { Writable } from "node:stream";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { driveEach } from "./jobs.ts";

describe("driveEach", () => {
  it("drives every row, logs a failure under the id field with its message and goes on", async () => {
    const lines: Record<string, unknown>[] = [];
    const log = pino(
      { level: "info" },
      new Writable({ write: (c: Buffer, _e, done) => (lines.push(JSON.parse(c.toString()) as Record<string, unknown>), done()) }),
    );
    const secretError = Object.assign(new Error("processor unavailable"), { headers: { authorization: "Bearer sk_live_secret" } });
    const driven = await driveEach(log, { noun: "payout intent", idField: "payout_id" }, [{ id: "po_1" }, { id: "po_2" }, { id: "po_3" }], async (row) => {
      if (row.id === "po_2") throw secretError;
      return { status: "paid" };
    });
    expect(driven).toBe(2);
    expect(lines.map((l) => [l["payout_id"], l["msg"]])).toEqual([
      ["po_1", "reconciler drove a payout intent"],
      ["po_2", "reconciler could not drive a payout intent yet"],
      ["po_3", "reconciler drove a payout intent"],
    ]);
    expect(lines[1]?.["error"]).toBe("Error: processor unavailable");
    expect(JSON.stringify(lines)).not.toContain("sk_live_secret");
  });
});
