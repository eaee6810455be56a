// Proves the per-request logger writes the same lines as a pino child (with every binding), and makes no
// child while nothing is logged at an enabled level.
import { describe, expect, it } from "vitest";
import { pino } from "pino";
import { LazyChildLogger } from "./lazy-logger.ts";

function capture(level: string) {
  const lines: Record<string, unknown>[] = [];
  const parent = pino({ level }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) });
  return { parent, lines };
}

describe("LazyChildLogger", () => {
  it("writes enabled lines with the request's bindings, including ones set later", () => {
    const { parent, lines } = capture("info");
    const log = new LazyChildLogger(parent, { request_id: "req_1" });
    log.setBindings({ trace_id: "t1", operation: "listParticipants" });
    log.debug("hidden");
    log.info({ status: 200 }, "request completed");
    log.setBindings({ extra: 1 });
    log.error("after");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({ request_id: "req_1", trace_id: "t1", operation: "listParticipants", status: 200, msg: "request completed" });
    expect(lines[1]).toMatchObject({ request_id: "req_1", trace_id: "t1", extra: 1, msg: "after" });
  });

  it("creates no pino child when every line is below the level", () => {
    const { parent, lines } = capture("warn");
    let children = 0;
    const child = parent.child.bind(parent);
    parent.child = ((b: pino.Bindings) => {
      children += 1;
      return child(b);
    }) as typeof parent.child;
    const log = new LazyChildLogger(parent, { request_id: "req_2" });
    log.setBindings({ trace_id: "t2" });
    log.info("not written");
    expect(log.isLevelEnabled("info")).toBe(false);
    expect(children).toBe(0);
    log.warn("written");
    expect(children).toBe(1);
    expect(lines[0]).toMatchObject({ request_id: "req_2", trace_id: "t2", msg: "written" });
  });
});
