import { execFile } from "child_process";

/**
 * The command that reads and restores a snapshot file. etcd 3.6 removed `snapshot status|restore` from etcdctl;
 * etcdutl has them since 3.5 with the same arguments. "auto" takes etcdutl when it is on PATH, else etcdctl
 * (etcd 3.4). A named command is used as it is.
 */
export const AUTO_SNAPSHOT_TOOL = "auto";

export interface SnapshotToolRun {
  tool: string;
  stdout: string;
  stderr: string;
}

function runOnce(command: string, args: string[]): Promise<SnapshotToolRun> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { env: { ...process.env, ETCDCTL_API: "3" }, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      if (err) reject(Object.assign(err, { stderr }));
      else resolve({ tool: command, stdout, stderr });
    });
  });
}

export async function runSnapshotTool(requested: string, args: string[]): Promise<SnapshotToolRun> {
  const candidates = requested === AUTO_SNAPSHOT_TOOL ? ["etcdutl", "etcdctl"] : [requested];
  for (const command of candidates) {
    try {
      return await runOnce(command, args);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT" && command !== candidates[candidates.length - 1]) continue;
      if (code === "ENOENT") {
        throw new Error(`${candidates.join(" and ")} ${candidates.length > 1 ? "were" : "was"} not found; install etcdutl (etcd 3.5+) or etcdctl (etcd 3.4), or name the one to use`);
      }
      const stderr = String((err as { stderr?: string }).stderr ?? "").trim().split("\n").pop();
      throw new Error(`${command} ${args.slice(0, 2).join(" ")} failed: ${stderr || (err as Error).message}`);
    }
  }
  throw new Error("no snapshot tool to run");
}
