/**
 * A `pulumi up` killed at the wrong moment can leave a file backend unreadable although its state is intact:
 * Pulumi's file backend (gocloud.dev's fileblob) writes each stack file atomically (a temp file, then a rename),
 * but first writes the file's metadata sidecar, `<stack>.json.attrs`, in place. A SIGKILL between that file's
 * create and its write leaves it empty, and every later command fails with "failed to load checkpoint: EOF".
 * The sidecar only holds the content type; a missing one is read as the default. So an empty or unreadable one is
 * removed, and the state stays exactly as the killed run last saved it.
 */
import * as fs from "fs";
import * as os from "os";
import * as path from "path";

/** The directory of a file backend (`file://DIR`, `file://~/DIR`), or undefined for any other backend. */
export function fileBackendDir(backendUrl: string | undefined): string | undefined {
  if (!backendUrl?.startsWith("file://")) return undefined;
  const dir = backendUrl.slice("file://".length).replace(/\?.*$/, "");
  return dir === "~" || dir.startsWith("~/") ? path.join(os.homedir(), dir.slice(1)) : dir;
}

/** The backend this machine's pulumi uses: PULUMI_BACKEND_URL, else the one `pulumi login` recorded. */
export function currentBackendUrl(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.PULUMI_BACKEND_URL) return env.PULUMI_BACKEND_URL;
  const home = env.PULUMI_HOME ?? path.join(os.homedir(), ".pulumi");
  try {
    return (JSON.parse(fs.readFileSync(path.join(home, "credentials.json"), "utf8")) as { current?: string }).current;
  } catch {
    return undefined;
  }
}

function isReadableSidecar(file: string): boolean {
  try {
    const value: unknown = JSON.parse(fs.readFileSync(file, "utf8"));
    return value !== null && typeof value === "object";
  } catch {
    return false;
  }
}

/** Removes the empty or unreadable `.attrs` sidecars of the stack files; returns the paths removed. */
export function removeTruncatedSidecars(backendUrl: string | undefined): string[] {
  const dir = fileBackendDir(backendUrl);
  const stacks = dir && path.join(dir, ".pulumi", "stacks");
  if (!stacks || !fs.existsSync(stacks)) return [];
  const removed: string[] = [];
  for (const entry of fs.readdirSync(stacks, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith(".attrs")) continue;
    const file = path.join(entry.parentPath, entry.name);
    if (isReadableSidecar(file)) continue;
    fs.rmSync(file, { force: true });
    removed.push(file);
  }
  return removed;
}
