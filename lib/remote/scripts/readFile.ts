/**
 * readFile: print a node file as one line of base64, for edits computed in lib/ (the node may lack node/python).
 *
 * Input: `{ path, root? }`. Output on stdout: base64 of the exact bytes (base64 keeps CRLF, a missing final
 * newline and any byte that is not UTF-8 intact); exit 1 with a message when the file does not exist.
 * The caller decodes it with readNodeFile, edits with lib (manifestFlags,
 * setKubeletClusterDns), and writes the result back with writeManifest, which refuses if the file changed meanwhile.
 */
import { SandboxRoot, buildScript, hostPath, sh } from "../remoteScript";
import { nodePath } from "./inputs";

export interface ReadFileInput extends SandboxRoot {
  path: string;
}

export function readFile(input: ReadFileInput): string {
  const path = nodePath(input.path, "path");
  return buildScript({ name: "read-file", root: input.root }, [
    sh`
      readonly FILE=${hostPath(path)}
      [ -f "$FILE" ] || die "$FILE does not exist"
      base64 -w 0 < "$FILE"
      echo
    `,
  ]);
}

/**
 * The file's text from the read step's stdout. Anything but one line of canonical base64 (an empty read, an error
 * text) is a failed read, named by node, file and step, never edited as if it were the file.
 */
export function readNodeFile(stdout: string, where: { node: string; path: string; step: string }): string {
  const text = stdout.trim();
  const bytes = Buffer.from(text, "base64");
  if (text === "" || bytes.toString("base64") !== text) {
    throw new Error(`node ${where.node}: reading ${where.path} returned no base64 content; check the ${where.step} step's output`);
  }
  return bytes.toString("utf8");
}
