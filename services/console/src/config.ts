/** The console service's own environment keys (the kit's BaseEnv comes first). process.env is read only here. */
import { z } from "zod";

export const ConsoleEnv = {
  /** The console's HTTP listener; the gateway's browser listener forwards /console to it (CONSOLE_URL there). */
  CONSOLE_PORT: z.coerce.number().int().min(0).max(65535).default(8090),
  CONSOLE_HOST: z.string().default("127.0.0.1"),
  /**
   * The browser reaches the console over https (production): the session cookie is then `__Host-` prefixed and
   * Secure. "false" only where it is plain http (a developer's machine, tests).
   */
  CONSOLE_SECURE_COOKIES: z.enum(["true", "false"]).default("true"),
  /** A session ends after this long without a request… */
  CONSOLE_SESSION_IDLE_MS: z.coerce
    .number()
    .int()
    .min(60_000)
    .max(86_400_000)
    .default(30 * 60_000),
  /** …and this long after sign-in, whatever the activity. */
  CONSOLE_SESSION_ABSOLUTE_MS: z.coerce
    .number()
    .int()
    .min(60_000)
    .max(7 * 86_400_000)
    .default(12 * 3_600_000),
  /** Deadline of one operator command sent to its owner (a chain audit or a bank file takes a while). */
  CONSOLE_COMMAND_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(300_000).default(60_000),
};
