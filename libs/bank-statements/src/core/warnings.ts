import type { StatementWarning } from "./types.ts";

/** A statement with a problem on every line must not produce an unbounded warning list. */
export const WARNINGS_MAX = 200;

/** Collects warnings up to WARNINGS_MAX, then counts the rest in one closing warning. */
export class Warnings {
  readonly list: StatementWarning[] = [];
  private dropped = 0;

  add(code: string, message: string, line?: number): void {
    if (this.list.length >= WARNINGS_MAX) {
      this.dropped++;
      return;
    }
    this.list.push(line === undefined ? { code, message } : { code, message, line });
  }

  result(): StatementWarning[] {
    if (this.dropped === 0) return this.list;
    return [...this.list, { code: "warnings_truncated", message: `${this.dropped} more warnings were left out` }];
  }
}
