/**
 * The operator console on the browser (alt) listener: `/console` and everything under it is forwarded as it came
 * to the console service (CONSOLE_URL), which renders the pages and checks the operator's session itself
 * (ADR 0021). The body passes through unparsed; the console sees the client's address in X-Forwarded-For.
 */
import replyFrom from "@fastify/reply-from";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";

/** Sign-in and action forms are small; nothing larger is forwarded. */
const CONSOLE_BODY_LIMIT_BYTES = 64 * 1024;

export async function registerConsole(app: FastifyInstance, consoleUrl: string): Promise<void> {
  await app.register(async (scope) => {
    // The console parses its own forms: this scope passes any body through as bytes.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", { parseAs: "buffer", bodyLimit: CONSOLE_BODY_LIMIT_BYTES }, (_req, body, done) => done(null, body));
    await scope.register(replyFrom, { base: consoleUrl });
    const forward = (req: FastifyRequest, reply: FastifyReply) =>
      reply.from(req.url, {
        // The client's address as this listener sees it (TRUST_PROXY), replacing whatever the client sent.
        rewriteRequestHeaders: (r, headers) => ({ ...headers, "x-forwarded-for": r.ip, "x-forwarded-proto": r.protocol }),
      });
    scope.all("/console", forward);
    scope.all("/console/*", forward);
  });
}
