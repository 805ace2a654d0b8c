// Runs a test file as a child process with a fault armed (lib/serviceMove/faultHook.ts), the way the fault tests
// cut a step with SIGKILL: the file reads its run from CIDR_MIGRATION_TEST_RUN when it is the main module.
import { spawn } from "child_process";
import * as path from "path";
import { FAULT_ENV } from "../../lib/serviceMove/faultHook";

export const RUN_ENV = "CIDR_MIGRATION_TEST_RUN";
const REPO = path.resolve(__dirname, "..", "..");

export interface ChildEnd { code: number | null; signal: NodeJS.Signals | null; output: string }

export function runFaultChild(file: string, run: unknown, fault: string): Promise<ChildEnd> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["-r", "ts-node/register/transpile-only", file], {
      cwd: REPO, env: { ...process.env, [RUN_ENV]: JSON.stringify(run), [FAULT_ENV]: fault }, stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d: Buffer) => { output += d.toString(); });
    child.stderr.on("data", (d: Buffer) => { output += d.toString(); });
    child.on("exit", (code, signal) => resolve({ code, signal, output }));
  });
}

/**
 * A test file that is also its own fault child: started as one (by runFaultChild), it runs `child`, which reads its
 * run from RUN_ENV; required by mocha, it defines its tests.
 */
export function childOrTests(mod: NodeModule, child: () => Promise<void>, defineTests: () => void): void {
  if (require.main !== mod) {
    defineTests();
    return;
  }
  child().catch((err: Error) => {
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  });
}
