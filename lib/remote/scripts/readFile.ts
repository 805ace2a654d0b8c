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

export interface ReadFilesInput extends SandboxRoot {
  paths: readonly string[];
}

/**
 * readFiles: several node files in one step, for an edit that spans them (a node address change touches manifests,
 * kubeconfigs and the kubelet's flags). One line per path, in order: the path, a space, then the base64 of its bytes,
 * or `-` when the file does not exist (kubeadm writes super-admin.conf only from 1.29 on, for example).
 */
export function readFiles(input: ReadFilesInput): string {
  if (input.paths.length === 0) throw new Error("paths is empty; name the files to read");
  const paths = input.paths.map((p, i) => nodePath(p, `paths[${i}]`));
  if (paths.some((p) => /\s/.test(p))) throw new Error(`paths must not hold white space; got ${JSON.stringify(paths)}`);
  return buildScript({ name: "read-files", root: input.root }, [
    sh`
      readonly NODE_PATHS=(${paths})
      readonly HOST_PATHS=(${paths.map((p) => hostPath(p))})
      for i in "\${!NODE_PATHS[@]}"; do
        if [ -f "\${HOST_PATHS[$i]}" ]; then
          printf '%s %s\n' "\${NODE_PATHS[$i]}" "$(base64 -w 0 < "\${HOST_PATHS[$i]}")"
        else
          printf '%s -\n' "\${NODE_PATHS[$i]}"
        fi
      done
    `,
  ]);
}

/** readFiles' stdout as path → text (undefined: the file does not exist); a missing or garbled line fails, named. */
export function readNodeFiles(stdout: string, paths: readonly string[], where: { node: string; step: string }): Map<string, string | undefined> {
  const lines = new Map(stdout.trim().split("\n").filter(Boolean).map((line) => {
    const space = line.indexOf(" ");
    return [line.slice(0, space), line.slice(space + 1)] as const;
  }));
  return new Map(paths.map((path) => {
    const content = lines.get(path);
    if (content === undefined) throw new Error(`node ${where.node}: the ${where.step} step's output has no line for ${path}; check its output`);
    return [path, content === "-" ? undefined : readNodeFile(content, { node: where.node, path, step: where.step })];
  }));
}
