import { createHash } from "crypto";
import * as pulumi from "@pulumi/pulumi";
import { runScriptOverSsh, SSH_OWN_FAILURE, SshTarget } from "../lib/remote/sshExec";
import { isUnknown, sameAsRecorded, throwIfFailed, TypedProvider, Wire, withSecretOutputs } from "./wire";

/**
 * RemoteScript: one generated bash script run once on a node over SSH (lib/remote/sshExec.ts), the way every node
 * step reaches its node. The script arrives on stdin; its stdout and stderr are the outputs.
 * - A change to the script or the triggers runs it again (a replacement); a new key or dial limit only records
 *   itself. Deleting the resource runs nothing: a step that happened stays done.
 * - The private key is a secret input and never an output. The state keeps the script's SHA-256, not its text.
 * - `secretOutput`: stdout and stderr are stored only as secrets, and a failure does not quote them (the join
 *   token step prints a bootstrap token).
 */

export interface SshConnection {
  host: string;
  port: number;
  user: string;
  /** PEM/OpenSSH private key; a secret. */
  privateKey: pulumi.Input<string>;
  /** "ssh-ed25519 AAAA...": the node's identity is pinned when given. */
  hostKey?: pulumi.Input<string>;
  dialErrorLimit: number;
  perDialTimeoutSeconds: number;
}

export interface RemoteScriptArgs {
  connection: SshConnection;
  script: pulumi.Input<string>;
  /** Values that run the script again when they change (e.g. the run id and the planned values). */
  triggers?: pulumi.Input<pulumi.Input<string>[]>;
  /** stdout and stderr hold a secret: store them as secrets and never quote them in an error. */
  secretOutput?: boolean;
}

interface ScriptInputs {
  target: SshTarget;
  script: string;
  triggers: string[];
  secretOutput: boolean;
}

/** What the state keeps, besides stdout and stderr: what diff compares, and where the script ran. */
interface Recorded {
  node: Omit<SshTarget, "privateKey" | "hostKey"> & { hostKey: string };
  scriptSha256: string;
  triggers: string[];
  secretOutput: boolean;
}

interface ScriptOutputs extends Recorded {
  stdout: string;
  stderr: string;
}

type ScriptWire = Wire<RemoteScriptArgs>;

/** How many trailing lines of stderr a failure quotes. */
const STDERR_LINES_IN_ERROR = 20;

function scriptDigest(script: string): string {
  return createHash("sha256").update(script).digest("hex");
}

/** Failures of a `connection` input (unknown parts pass: preview). */
export function connectionFailures(connection: unknown): pulumi.dynamic.CheckFailure[] {
  const failures: pulumi.dynamic.CheckFailure[] = [];
  const c = connection as Record<string, unknown> | undefined;
  if (isUnknown(c)) return failures;
  if (typeof c !== "object" || c === null) return [{ property: "connection", reason: "connection is required" }];
  for (const key of ["host", "user", "privateKey"]) {
    if (!isUnknown(c[key]) && (typeof c[key] !== "string" || c[key] === "")) failures.push({ property: "connection", reason: `connection.${key} is required (a non-empty string)` });
  }
  for (const key of ["port", "dialErrorLimit", "perDialTimeoutSeconds"]) {
    if (!isUnknown(c[key]) && (!Number.isSafeInteger(c[key]) || (c[key] as number) <= 0)) failures.push({ property: "connection", reason: `connection.${key} ${JSON.stringify(c[key])} must be a positive whole number` });
  }
  return failures;
}

function checkInputs(news: ScriptWire): pulumi.dynamic.CheckFailure[] {
  const failures = connectionFailures(news.connection);
  if (!isUnknown(news.script) && (typeof news.script !== "string" || news.script === "")) failures.push({ property: "script", reason: "script is required (a non-empty string)" });
  return failures;
}

/** The SSH target of a checked `connection` input. */
export function sshTargetOf(connection: unknown): SshTarget {
  const c = connection as Record<string, unknown>;
  return {
    host: c.host as string,
    port: c.port as number,
    user: c.user as string,
    privateKey: c.privateKey as string,
    hostKey: typeof c.hostKey === "string" && c.hostKey !== "" ? c.hostKey : undefined,
    dialErrorLimit: c.dialErrorLimit as number,
    perDialTimeoutSeconds: c.perDialTimeoutSeconds as number,
  };
}

function asInputs(news: ScriptWire): ScriptInputs {
  throwIfFailed(checkInputs(news));
  return {
    target: sshTargetOf(news.connection),
    script: news.script as string,
    triggers: Array.isArray(news.triggers) ? news.triggers.map(String) : [],
    secretOutput: news.secretOutput === true,
  };
}

function recorded(inputs: ScriptInputs): Recorded {
  const { host, port, user, hostKey, dialErrorLimit, perDialTimeoutSeconds } = inputs.target;
  return {
    node: { host, port, user, hostKey: hostKey ?? "", dialErrorLimit, perDialTimeoutSeconds },
    scriptSha256: scriptDigest(inputs.script),
    triggers: inputs.triggers,
    secretOutput: inputs.secretOutput,
  };
}

/** A step script's failure as an error: ssh's own reason, or the script's last lines (none when secret). */
export function scriptFailure(target: SshTarget, exitCode: number, stderr: string, secretOutput = false): Error {
  const where = `${target.user}@${target.host}:${target.port}`;
  const lines = stderr.replace(/\r/g, "").trimEnd().split("\n");
  if (exitCode === SSH_OWN_FAILURE) {
    // ssh's own last line says why ("Host key verification failed.", "Connection refused"); its banners do not
    return new Error(`cannot run the step on ${where} over SSH (ssh exit ${exitCode}): ${lines[lines.length - 1] || "no reason given"} Check that the node is up, the key is authorized and the host key matches.`);
  }
  const detail = secretOutput
    ? "(its output is not shown: it may hold a secret; run the step's script by hand to see it)"
    : lines.slice(-STDERR_LINES_IN_ERROR).join("\n");
  return new Error(`the step's script failed on ${where} with exit ${exitCode}: ${detail}`);
}

async function runScript(inputs: ScriptInputs): Promise<ScriptOutputs> {
  const result = await runScriptOverSsh(inputs.target, inputs.script);
  if (result.exitCode !== 0) throw scriptFailure(inputs.target, result.exitCode, result.stderr, inputs.secretOutput);
  return { ...recorded(inputs), stdout: result.stdout, stderr: result.stderr };
}

export const remoteScriptProvider: TypedProvider<RemoteScriptArgs, ScriptOutputs> = {
  async check(_olds, news) {
    return { inputs: news, failures: checkInputs(news) };
  },

  async diff(_id, olds, news) {
    const replaces: string[] = [];
    if (isUnknown(news.script) || typeof news.script !== "string" || scriptDigest(news.script) !== olds.scriptSha256) replaces.push("script");
    if (isUnknown(news.triggers) || !sameAsRecorded((news.triggers as unknown[] | undefined ?? []).map(String), olds.triggers ?? [])) replaces.push("triggers");
    if (replaces.length > 0) return { changes: true, replaces, deleteBeforeReplace: false };
    if (isUnknown(news.connection)) return { changes: true };
    const { node } = recorded(asInputs(news));
    return { changes: !sameAsRecorded(node, olds.node) || news.secretOutput !== olds.secretOutput };
  },

  async create(news) {
    const inputs = asInputs(news);
    const outs = await runScript(inputs);
    return { id: `${inputs.target.host}:${inputs.target.port}/${outs.scriptSha256}`, outs };
  },

  async update(_id, olds, news) {
    // Only the way to reach the node changed; the step itself stays done.
    return { outs: { ...olds, ...recorded(asInputs(news)) } };
  },

  async delete(): Promise<void> {
    // A step that ran stays done: removing it from the stack changes nothing on the node.
  },
};

export class RemoteScript extends pulumi.dynamic.Resource {
  declare readonly stdout: pulumi.Output<string>;
  declare readonly stderr: pulumi.Output<string>;

  constructor(name: string, args: RemoteScriptArgs, opts?: pulumi.CustomResourceOptions) {
    const secretOutput = args.secretOutput ?? false;
    super(
      remoteScriptProvider,
      name,
      {
        connection: { ...args.connection, privateKey: pulumi.secret(args.connection.privateKey) },
        script: args.script,
        triggers: args.triggers ?? [],
        secretOutput,
        stdout: undefined,
        stderr: undefined,
      },
      secretOutput ? withSecretOutputs(opts, ["stdout", "stderr"]) : opts,
      "cidr-migration",
      "RemoteScript",
    );
  }
}
