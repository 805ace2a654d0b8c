import { strict as assert } from "assert";
import { knownHostsLine, sshArguments, SshTarget } from "../../../lib/remote/sshExec";
import { RUN_SCRIPT_FROM_STDIN } from "../../../lib/remote/stdinRunner";

const target: SshTarget = { host: "10.0.0.11", port: 2222, user: "admin", privateKey: "KEY", dialErrorLimit: 3, perDialTimeoutSeconds: 7 };
const option = (args: string[], name: string): string | undefined => args.find((a, i) => args[i - 1] === "-o" && a.startsWith(`${name}=`))?.split("=")[1];

describe("sshExec: one SSH session per node step", () => {
  it("pins the host key against its own known_hosts file only, and never reads the operator's ssh config", () => {
    const args = sshArguments({ ...target, hostKey: "ssh-ed25519 AAAA" }, { keyFile: "/tmp/k", knownHostsFile: "/tmp/kh" });
    assert.deepEqual(args.slice(0, 2), ["-F", "/dev/null"]);
    assert.equal(option(args, "StrictHostKeyChecking"), "yes");
    assert.equal(option(args, "UserKnownHostsFile"), "/tmp/kh");
    assert.equal(option(args, "GlobalKnownHostsFile"), "/dev/null");
    assert.equal(option(args, "BatchMode"), "yes");
    assert.equal(option(args, "IdentitiesOnly"), "yes");
  });

  it("turns the dial limits into ConnectTimeout and ConnectionAttempts, and sends only the stdin runner as the command", () => {
    const args = sshArguments(target, { keyFile: "/tmp/k" });
    assert.equal(option(args, "ConnectTimeout"), "7");
    assert.equal(option(args, "ConnectionAttempts"), "3");
    assert.equal(option(args, "StrictHostKeyChecking"), "no", "no host key given: not checked, as configured");
    assert.deepEqual(args.slice(args.indexOf("--")), ["--", "10.0.0.11", RUN_SCRIPT_FROM_STDIN]);
    assert.deepEqual(args.slice(args.indexOf("-i"), args.indexOf("-i") + 6), ["-i", "/tmp/k", "-p", "2222", "-l", "admin"]);
  });

  it("writes known_hosts lines the way ssh looks them up: bracketed host:port, bare host on 22", () => {
    assert.equal(knownHostsLine("10.0.0.11", 2222, "ssh-ed25519 AAAA \n"), "[10.0.0.11]:2222 ssh-ed25519 AAAA\n");
    assert.equal(knownHostsLine("node-1", 22, "ssh-ed25519 AAAA"), "node-1 ssh-ed25519 AAAA\n");
  });
});
