// The sandbox the e2e suite drives, as `cidr-migration sandbox up` starts it. Restarted once per test process, so
// it runs the test-bed version this run asks for (CIDR_MIGRATION_KUBE_VERSION) and logs the audit events the
// preview tests read; the suite files of one run share it.
import * as path from "path";
import { sandboxDown, sandboxUp } from "../testbed/sandbox";

let started: Promise<{ clusterDir: string; auditLogPath: string }> | undefined;

export function startSandboxForEngine(): Promise<{ clusterDir: string; auditLogPath: string }> {
  started ??= (async () => {
    await sandboxDown();
    const info = await sandboxUp();
    return { clusterDir: info.clusterDir, auditLogPath: path.join(info.clusterDir, "audit.log") };
  })();
  return started;
}

/** Stops the sandbox the suite started, so the machine is left as the suite found it. */
export async function stopSandboxForEngine(): Promise<void> {
  if (!started) return;
  started = undefined;
  await sandboxDown();
}
