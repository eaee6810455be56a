// What the dev stack runs now, and whether it is stopping: shared by the steps that start, supervise and stop it.
import type { ChildProcess } from "node:child_process";
import type { ServiceName } from "@treasury/contracts";
import type { RunningServer } from "@treasury/testing/servers";

export interface Child {
  name: ServiceName;
  proc: ChildProcess;
  exited: Promise<void>;
  hasExited: boolean;
}

export const stack: {
  /** Each service's current process (a restart replaces its entry). */
  children: Child[];
  /** The servers this script started, in the order to stop them. */
  infra: { name: string; server: RunningServer }[];
  shuttingDown: boolean;
} = { children: [], infra: [], shuttingDown: false };
