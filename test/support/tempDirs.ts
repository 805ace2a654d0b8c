// Throwaway directories for one test file, removed when the run ends.
import * as fs from "fs";
import * as os from "os";
import * as path from "path";

const made: string[] = [];
after(() => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true });
});

export function tempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `cidr-migration-${prefix}-`));
  made.push(dir);
  return dir;
}
