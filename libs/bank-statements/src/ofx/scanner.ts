/**
 * One tokenizer for both OFX generations: 1.x is SGML (leaf elements are not closed, an aggregate's end tag
 * may close several open elements at once), 2.x is XML (everything closed, CDATA allowed). Both reduce to the
 * same events: an aggregate opens, a leaf has a value, an aggregate closes. It reads the text once, left to
 * right, and keeps only the stack of open aggregates.
 */
import { invalidStatement } from "../core/errors.ts";
import { checkFieldLength, NESTING_DEPTH_MAX } from "../core/limits.ts";

export interface OfxEvents {
  open(name: string, line: number): void;
  leaf(name: string, value: string, line: number): void;
  close(name: string, line: number): void;
}

const ENTITY_RE = /&(#x[0-9a-f]+|#\d+|amp|lt|gt|quot|apos|nbsp);/gi;
const NAMED: Readonly<Record<string, string>> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: "\u00a0" };

/**
 * Character references are decoded exactly once, as SGML and XML define them: a bank that escaped twice
 * (`&amp;lt;`) gets back the once-escaped text it sent (`&lt;`), not a guess at what it meant.
 */
export function decodeEntities(text: string): string {
  if (!text.includes("&")) return text;
  return text.replace(ENTITY_RE, (whole, ref: string) => {
    const lower = ref.toLowerCase();
    if (lower.startsWith("#x")) return safeCodePoint(parseInt(lower.slice(2), 16), whole);
    if (lower.startsWith("#")) return safeCodePoint(parseInt(lower.slice(1), 10), whole);
    return NAMED[lower] ?? whole;
  });
}

function safeCodePoint(cp: number, fallback: string): string {
  return Number.isInteger(cp) && cp > 0 && cp <= 0x10ffff ? String.fromCodePoint(cp) : fallback;
}

export class OfxScanner {
  private pos: number;
  private line: number;
  private counted: number;
  private readonly stack: string[] = [];

  constructor(
    private readonly text: string,
    start: number,
    startLine: number,
    private readonly events: OfxEvents,
  ) {
    this.pos = start;
    this.counted = start;
    this.line = startLine;
  }

  /** The 1-based line of `index`, counting newlines incrementally (positions only move forward). */
  private lineAt(index: number): number {
    const text = this.text;
    for (let i = this.counted; i < index; i++) if (text.charCodeAt(i) === 10) this.line++;
    this.counted = Math.max(this.counted, index);
    return this.line;
  }

  run(): void {
    const text = this.text;
    while (true) {
      const lt = text.indexOf("<", this.pos);
      if (lt < 0) break;
      this.pos = lt;
      if (text.startsWith("<!--", lt)) this.skipPast("-->");
      else if (text.startsWith("<?", lt) || text.startsWith("<!", lt)) this.skipPast(">");
      else if (text.startsWith("</", lt)) this.closeTag();
      else this.openTag();
    }
    this.closeAll();
  }

  private skipPast(terminator: string): void {
    const end = this.text.indexOf(terminator, this.pos);
    this.pos = end < 0 ? this.text.length : end + terminator.length;
  }

  private tagName(from: number): { name: string; end: number } {
    const gt = this.text.indexOf(">", from);
    const end = gt < 0 ? this.text.length : gt;
    let name = this.text.slice(from, end);
    // OFX tags carry no attributes; anything after a space (a stray attribute) is not part of the name.
    if (/\s/.test(name)) name = name.trim().split(/\s/, 1)[0] ?? "";
    return { name: name.toUpperCase(), end: end + 1 };
  }

  private closeTag(): void {
    const line = this.lineAt(this.pos);
    const { name, end } = this.tagName(this.pos + 2);
    this.pos = end;
    // A closing tag for an aggregate closes everything opened inside it; a stray one (SGML leaf closers
    // the leaf already consumed, or junk) closes nothing.
    const at = this.stack.lastIndexOf(name);
    if (at < 0) return;
    while (this.stack.length > at) this.events.close(this.stack.pop() as string, line);
  }

  private openTag(): void {
    const line = this.lineAt(this.pos);
    const { name, end } = this.tagName(this.pos + 1);
    this.pos = end;
    const value = this.readValue(line);
    if (value === null) {
      // OFX nests a dozen levels; deeper is not a statement, and every closing tag searches this stack.
      if (this.stack.length >= NESTING_DEPTH_MAX)
        throw invalidStatement(`elements nest deeper than ${NESTING_DEPTH_MAX} levels`, { line, field: name.slice(0, 40) });
      this.stack.push(name);
      this.events.open(name, line);
      return;
    }
    this.events.leaf(name, value, line);
    // XML (and some SGML writers) close the leaf explicitly: consume that closer here.
    const closer = `</${name}>`;
    if (this.text.startsWith(closer, this.pos) || this.text.slice(this.pos, this.pos + closer.length).toUpperCase() === closer) {
      this.pos += closer.length;
    }
  }

  /**
   * The text after a start tag up to the next tag, with CDATA sections taken verbatim; null when empty. Refused
   * past FIELD_CHARS_MAX characters (white space included) before entities are decoded.
   */
  private readValue(line: number): string | null {
    const text = this.text;
    const start = this.pos;
    let out = "";
    while (true) {
      const lt = text.indexOf("<", this.pos);
      const stop = lt < 0 ? text.length : lt;
      checkFieldLength(stop - start, "an element's value", { line });
      out += decodeEntities(text.slice(this.pos, stop));
      this.pos = stop;
      if (lt < 0 || !text.startsWith("<![CDATA[", lt)) break;
      const cdataEnd = text.indexOf("]]>", lt + 9);
      const contentEnd = cdataEnd < 0 ? text.length : cdataEnd;
      checkFieldLength(contentEnd - start, "an element's value", { line });
      out += text.slice(lt + 9, contentEnd);
      this.pos = cdataEnd < 0 ? text.length : cdataEnd + 3;
    }
    const value = out.trim();
    return value === "" ? null : value;
  }

  private closeAll(): void {
    const line = this.lineAt(this.text.length);
    while (this.stack.length > 0) this.events.close(this.stack.pop() as string, line);
  }
}
