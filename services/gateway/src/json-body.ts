/**
 * The one way a request body becomes a value: UTF-8 only (another charset is 415), valid UTF-8 bytes, JSON
 * nested at most JSON_DEPTH_MAX levels (checked on the text, before anything is built from it), and strings a
 * database can store (no U+0000, no lone surrogates). Each refusal is a precise 400 the client can act on; none
 * can reach a service as a 500.
 */
import { DomainError, JSON_DEPTH_MAX, jsonDepthExceeds, unstorableStringError } from "@treasury/contracts";

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** The charset a Content-Type names, lower-cased, or undefined. */
function charsetOf(contentType: string | undefined): string | undefined {
  const m = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType ?? "");
  return m?.[1]?.toLowerCase();
}

/** The parsed body (undefined for an empty one), or the error to answer. */
export function parseJsonBody(contentType: string | undefined, body: Buffer): unknown {
  const charset = charsetOf(contentType);
  if (charset !== undefined && charset !== "utf-8" && charset !== "utf8") {
    return new DomainError("unsupported_media_type", `Request bodies are UTF-8 JSON; charset=${charset} is not accepted`, {
      hint: "Send Content-Type: application/json (UTF-8)",
    });
  }
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    return new DomainError("invalid_json", "Request body is not valid UTF-8");
  }
  if (text.trim() === "") return undefined;
  if (jsonDepthExceeds(text)) return new DomainError("invalid_json", `Request body nests objects or arrays deeper than ${JSON_DEPTH_MAX} levels`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return new DomainError("invalid_json", "Request body is not valid JSON");
  }
  return unstorableStringError(parsed, "Body") ?? parsed;
}
