// The environment that runs the real Pulumi engine built by the test bed: PATH, PULUMI_HOME and the no-download
// settings, as test/testbed/build/pulumi.sh --env prints them (it builds the engine when it is missing).
import { spawnSync } from "child_process";
import * as path from "path";

const PULUMI_BUILD = path.join(__dirname, "build", "pulumi.sh");

let cached: Record<string, string> | undefined;

export function engineEnv(): Record<string, string> {
  if (cached) return cached;
  const build = spawnSync("bash", [PULUMI_BUILD, "--env"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  if (build.status !== 0) throw new Error(`the Pulumi engine is not available (test/testbed/build/pulumi.sh):\n${build.stderr}`);
  const env: Record<string, string> = {};
  for (const line of build.stdout.split("\n")) {
    const m = /^export ([A-Z_]+)="(.*)"$/.exec(line);
    if (m) env[m[1]] = m[2].replace("$PATH", process.env.PATH ?? "");
  }
  cached = env;
  return env;
}
