// Proves an unhandled rejection or an uncaught exception is logged through the service's logger (fatal, with the
// error) and ends the process with status 1.
import { EventEmitter } from "node:events";
import { describe, expect, it } from "vitest";
import { installCrashHandlers } from "./crash.ts";
import { captureLogger } from "./test-support.ts";

function fakeProcess(): { target: EventEmitter & { exit(code: number): never }; exits: number[] } {
  const exits: number[] = [];
  const target = Object.assign(new EventEmitter(), {
    exit: (code: number): never => {
      exits.push(code);
      return undefined as never;
    },
  });
  return { target, exits };
}

describe("installCrashHandlers", () => {
  it.each([
    ["unhandledRejection", "unhandled promise rejection; exiting"],
    ["uncaughtException", "uncaught exception; exiting"],
  ] as const)("logs %s as fatal and exits with 1", (event, msg) => {
    const { log, lines } = captureLogger("payments");
    const { target, exits } = fakeProcess();
    installCrashHandlers(log, target);
    target.emit(event, new Error("boom"));
    expect(exits).toEqual([1]);
    const line = lines.find((l) => l["msg"] === msg);
    expect(line?.["level"]).toBe("fatal");
    expect((line?.["err"] as { message?: string } | undefined)?.message).toBe("boom");
    expect(line?.["service"]).toBe("payments");
  });
});
