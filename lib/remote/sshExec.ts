/**
 * One way to reach a node: a generated script, sent on stdin to one SSH session with the openssh client, and run
 * by bash there (RUN_SCRIPT_FROM_STDIN). The script never appears on a command line, here or on the node.
 *
 * - The private key is written to a mode-0600 file in a private temp directory, used by this one session, and
 *   removed when it ends, whatever the outcome.
 * - With a `hostKey` the node's identity is pinned (StrictHostKeyChecking=yes against that key alone, never the
 *   user's known_hosts); without one it is not checked, as the operator chose.
 * - Dial limits: `perDialTimeoutSeconds` is ConnectTimeout, `dialErrorLimit` is ConnectionAttempts, so a node that
 *   is down fails its step in about a minute instead of hanging the run.
 * Exit status 255 is ssh's own failure (refused, timed out, host key mismatch), told apart from the script's.
 */
import { spawn } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { RUN_SCRIPT_FROM_STDIN } from "./stdinRunner";

export interface SshTarget {
  host: string;
  port: number;
  user: string;
  /** PEM/OpenSSH private key content. */
  privateKey: string;
  /** "ssh-ed25519 AAAA...": pinned when given. */
  hostKey?: string;
  dialErrorLimit: number;
  perDialTimeoutSeconds: number;
}

export interface SshResult {
  /** The script's exit status; 255 is ssh's own failure. */
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** ssh's exit status when it failed itself, before or outside the remote command. */
export const SSH_OWN_FAILURE = 255;

/** The openssh client arguments for one session to `target`, with the key and known_hosts files given. */
export function sshArguments(target: SshTarget, files: { keyFile: string; knownHostsFile?: string }): string[] {
  const hostCheck = files.knownHostsFile
    ? ["-o", "StrictHostKeyChecking=yes", "-o", `UserKnownHostsFile=${files.knownHostsFile}`, "-o", "GlobalKnownHostsFile=/dev/null"]
    : ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "GlobalKnownHostsFile=/dev/null"];
  return [
    "-F", "/dev/null", // the operator's ~/.ssh/config must not change where or how a step connects
    "-i", files.keyFile, "-p", String(target.port), "-l", target.user,
    "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes", "-o", "LogLevel=ERROR",
    ...hostCheck,
    "-o", `ConnectTimeout=${target.perDialTimeoutSeconds}`, "-o", `ConnectionAttempts=${target.dialErrorLimit}`,
    "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4",
    "--", target.host, RUN_SCRIPT_FROM_STDIN,
  ];
}

/** known_hosts line for a pinned key: bracketed host:port unless the port is 22, as ssh looks it up. */
export function knownHostsLine(host: string, port: number, hostKey: string): string {
  return `${port === 22 ? host : `[${host}]:${port}`} ${hostKey.trim()}\n`;
}

/** Runs `script` with bash on the target through one SSH session; resolves with its exit status and output. */
export async function runScriptOverSsh(target: SshTarget, script: string): Promise<SshResult> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cidr-migration-ssh-"));
  try {
    const keyFile = path.join(dir, "key");
    // ssh refuses a key without its final newline ("invalid format")
    fs.writeFileSync(keyFile, target.privateKey.endsWith("\n") ? target.privateKey : `${target.privateKey}\n`, { mode: 0o600 });
    let knownHostsFile: string | undefined;
    if (target.hostKey) {
      knownHostsFile = path.join(dir, "known_hosts");
      fs.writeFileSync(knownHostsFile, knownHostsLine(target.host, target.port, target.hostKey));
    }
    return await new Promise<SshResult>((resolve, reject) => {
      const child = spawn("ssh", sshArguments(target, { keyFile, knownHostsFile }), { stdio: ["pipe", "pipe", "pipe"] });
      const stdout: Buffer[] = [];
      const stderr: Buffer[] = [];
      child.stdout.on("data", (d: Buffer) => stdout.push(d));
      child.stderr.on("data", (d: Buffer) => stderr.push(d));
      child.on("error", (err) => reject(new Error(`cannot run ssh (${err.message}); install the openssh client`)));
      child.on("close", (code, signal) => resolve({
        exitCode: code ?? (signal ? 128 : SSH_OWN_FAILURE),
        stdout: Buffer.concat(stdout).toString("utf8"),
        stderr: Buffer.concat(stderr).toString("utf8"),
      }));
      child.stdin.on("error", () => { /* the session ended before reading all of stdin; its status tells why */ });
      child.stdin.end(script);
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
