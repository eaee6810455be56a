import { checkFieldLength } from "../core/limits.ts";
import { hasControlChars, readLines, stripControlChars } from "../core/text.ts";
import type { Warnings } from "../core/warnings.ts";

/** One tag of an MT940 message with its continuation lines. */
export interface TagField {
  tag: string;
  lines: string[];
  line: number;
}

export type MtItem = TagField | { tag: "-"; lines: []; line: number };

const TAG_RE = /^:([0-9A-Z]{2,3}):/;

/**
 * MT940 as a sequence of tags. A line starting with `:NN[a]:` opens a tag; other lines continue the open tag.
 * SWIFT envelope blocks (`{1:…}{2:…}{4:`), bank header lines before the first tag, blank lines and control
 * bytes (SOH/ETX) are dropped; a line `-` (or `-}`) ends a message.
 */
export function* mtItems(text: string, warnings: Warnings): Generator<MtItem> {
  let current: TagField | undefined;
  let chars = 0;
  let warnedControl = false;
  for (const raw of readLines(text)) {
    let line = raw.text;
    if (hasControlChars(line)) {
      line = stripControlChars(line);
      if (!warnedControl) warnings.add("control_characters_removed", "control bytes (such as SOH/ETX) were removed", raw.no);
      warnedControl = true;
    }
    const block4 = line.indexOf("{4:");
    if (line.startsWith("{") && block4 >= 0) line = line.slice(block4 + 3);
    else if (line.startsWith("{")) continue;
    if (line.trim() === "") continue;
    if (/^-\}?\s*$/.test(line)) {
      if (current) yield current;
      current = undefined;
      yield { tag: "-", lines: [], line: raw.no };
      continue;
    }
    const m = TAG_RE.exec(line);
    if (m) {
      if (current) yield current;
      current = { tag: m[1] as string, lines: [line.slice(m[0].length)], line: raw.no };
      chars = line.length - m[0].length;
    } else if (current) {
      current.lines.push(line);
      chars += line.length;
    }
    // A field (its continuation lines together) is capped before any pattern reads it.
    if (current) checkFieldLength(chars, `field :${current.tag}:`, { line: current.line, field: current.tag });
    // Lines before the first tag are bank routing headers (e.g. "ABNANL2A", "940"): not statement data.
  }
  if (current) yield current;
}
