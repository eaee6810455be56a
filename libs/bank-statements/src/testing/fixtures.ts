import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The package's test-data folder (real bank files, see test-data/SOURCES.md). */
export const TEST_DATA_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "test-data");

/** A fixture's exact bytes: readers get Buffers, as the import endpoint will give them. */
export function fixture(path: string): Buffer {
  return readFileSync(join(TEST_DATA_DIR, path));
}
