/**
 * This project's Pulumi program as an inline program: the function index.ts exports, loaded from the project
 * directory (where Pulumi.yaml and the stack files are). Loaded lazily, so a CLI command that never runs the
 * engine never loads the program's dependencies.
 */
import * as path from "path";
import { PulumiFn } from "@pulumi/pulumi/automation";

/** The project directory: the repository root, beside index.ts. */
export const PROJECT_DIR = path.join(__dirname, "..");

export function projectProgram(projectDir: string = PROJECT_DIR): PulumiFn {
  return async () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const program = require(path.join(projectDir, "index")) as PulumiFn;
    return program();
  };
}
