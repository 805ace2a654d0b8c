/**
 * The `pulumi` CLI for the fleet's Automation API workspaces, each run in a session of its own (setsid).
 *
 * Why: Ctrl-C in a terminal sends SIGINT to the whole foreground process group, so the `pulumi` children would get
 * it from the terminal and again from the Automation API when the fleet aborts them, and a second SIGINT makes the
 * engine stop at once instead of finishing the steps in flight. In their own session they get exactly one: the
 * fleet's, sent through the Automation API's abort signal.
 */
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { PulumiCommand } from "@pulumi/pulumi/automation";
import { shellQuote } from "../lib/remote/shellQuote";

let command: Promise<PulumiCommand> | undefined;

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    const candidate = path.join(dir, name);
    if (dir !== "" && fs.existsSync(candidate)) return candidate;
  }
  return undefined;
}

/** A PulumiCommand whose binary is a wrapper that starts the real `pulumi` (found on PATH now) under setsid. */
export function sessionPulumiCommand(): Promise<PulumiCommand> {
  command ??= (async () => {
    const pulumi = onPath("pulumi");
    const setsid = onPath("setsid");
    if (!pulumi || !setsid) return PulumiCommand.get({ skipVersionCheck: true });
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "cidr-migration-pulumi-"));
    fs.mkdirSync(path.join(root, "bin"));
    // The real binary's directory stays first on PATH, so its bundled plugins are found as without the wrapper.
    fs.writeFileSync(path.join(root, "bin", "pulumi"), `#!/bin/sh\nPATH=${shellQuote(path.dirname(pulumi))}:"$PATH" exec ${shellQuote(setsid)} ${shellQuote(pulumi)} "$@"\n`, { mode: 0o755 });
    process.once("exit", () => fs.rmSync(root, { recursive: true, force: true }));
    return PulumiCommand.get({ root, skipVersionCheck: true });
  })();
  return command;
}
