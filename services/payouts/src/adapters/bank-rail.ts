/**
 * The bank rail live payouts travel on. `BankRail` (usecases/ports.ts) is what the use cases need: render a file of credits, deliver
 * it, read the bank's returns. `achDropRail` is the real one: NACHA files (domain/nacha.ts) written to a drop
 * directory that the bank's SFTP pick-up reads, and NACHA return files read back (domain/nacha-returns.ts).
 */
import { randomUUID } from "node:crypto";
import { mkdir, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { nextBankingDay, renderNachaFile, traceNumberOf, type NachaOrigin } from "../domain/nacha.ts";
import { parseReturnFile } from "../domain/nacha-returns.ts";
import type { BankRail } from "../usecases/ports.ts";

export type { BankRail, RailFile } from "../usecases/ports.ts";

export interface AchDropConfig {
  dir: string;
  origin: NachaOrigin;
}

export function achDropRail(cfg: AchDropConfig): BankRail {
  return {
    traceNumber: (sequence) => traceNumberOf(cfg.origin.odfiRouting, sequence),
    effectiveDate: (now) => nextBankingDay(now),
    fileName: (creation, modifier) => `ACH_${creation.toISOString().slice(0, 19).replace(/[-:]/g, "").replace("T", "_")}_${modifier}.ach`,
    render: (file) =>
      renderNachaFile({
        origin: cfg.origin,
        creation: file.creation,
        fileIdModifier: file.fileIdModifier,
        effectiveDate: file.effectiveDate,
        credits: file.credits,
      }),
    async deliver(name, text) {
      await mkdir(cfg.dir, { recursive: true, mode: 0o700 });
      const location = join(cfg.dir, name);
      // Written aside and renamed into place: the pick-up never sees half a file, and two replicas delivering the
      // same file each write their own partial copy of the same bytes. Owner-only: it holds account numbers.
      const partial = join(cfg.dir, `.${name}.${randomUUID()}.partial`);
      await writeFile(partial, text, { mode: 0o600 });
      await rename(partial, location);
      return { location };
    },
    parseReturns: (text) => parseReturnFile(text),
  };
}
