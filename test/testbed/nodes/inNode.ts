import { strict as assert } from "assert";
import { spawnSync } from "child_process";
import * as path from "path";
import { defaultSite, LabSite, siteEnv } from "./labStack";

const LAB_SH = path.join(__dirname, "lab.sh");

/** Runs `command` inside a node of the lab (`lab.sh exec`); fails the test on a non-zero exit; returns its stdout. */
export function inNode(node: string, command: string[], site: LabSite = defaultSite()): string {
  const result = spawnSync("bash", [LAB_SH, "exec", node, ...command], { encoding: "utf8", env: siteEnv(site) });
  assert.equal(result.status, 0, `${command.join(" ")} on ${node}: ${result.stderr}`);
  return result.stdout;
}
