// The sandbox the e2e suite drives, as `cidr-migration sandbox up` starts it, with the apiserver's audit log the
// preview tests read. A sandbox started before the test bed logged audit events is restarted (down, then up).
import * as fs from "fs";
import * as path from "path";
import { sandboxDown, sandboxStatus, sandboxUp } from "../testbed/sandbox";

export async function startSandboxForEngine(): Promise<{ clusterDir: string; auditLogPath: string }> {
  let status = await sandboxStatus();
  if (status.running && !fs.existsSync(path.join(status.clusterDir, "audit.log"))) {
    await sandboxDown();
    status = await sandboxStatus();
  }
  const info = status.running ? status : await sandboxUp();
  return { clusterDir: info.clusterDir, auditLogPath: path.join(info.clusterDir, "audit.log") };
}
