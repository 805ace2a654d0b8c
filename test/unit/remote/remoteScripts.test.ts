/**
 * The quoting helper, the script builder and every step script, run for real with bash:
 * - every generated script passes Debian's shellcheck (missing shellcheck fails the suite, it is never skipped);
 * - each script runs in a temp directory standing in for `/` (fake manifests, pki, kubelet and CNI state) with fake
 *   `systemctl`, `kubeadm` and `curl` first on PATH that record their calls outside the sandbox root;
 * - a second run changes nothing: the sandbox tree hash (paths, types, modes, contents) is compared;
 * - the flannel cleanup deletes real `cni0` (bridge) and `flannel.1` (VXLAN) links in a network namespace made here.
 */
import { strict as assert } from "assert";
import { execFileSync, spawnSync } from "child_process";
import { createHash } from "crypto";
import * as fs from "fs";
import * as path from "path";
import { UserError } from "../../../lib/config/errors";
import { readFlags, setFlags } from "../../../lib/controlPlane/manifestFlags";
import { ShellCode, buildScript, hostPath, sh } from "../../../lib/remote/remoteScript";
import { Sensitive } from "../../../lib/config/sensitive";
import { shellQuote, shellQuoteAll } from "../../../lib/remote/shellQuote";
import { BACKUP_COMPLETE_MARKER, backupControlPlane } from "../../../lib/remote/scripts/backupControlPlane";
import { cleanupCni } from "../../../lib/remote/scripts/cleanupCni";
import { REJOIN_MARKER, kubeadmRejoin } from "../../../lib/remote/scripts/kubeadmRejoin";
import { kubeletReregister } from "../../../lib/remote/scripts/kubeletReregister";
import { readFile, readFiles, readNodeFiles } from "../../../lib/remote/scripts/readFile";
import { writeFilesThenRestart } from "../../../lib/remote/scripts/writeFilesThenRestart";
import { restoreManifest } from "../../../lib/remote/scripts/restoreManifest";
import { editKubeletClusterDns, setKubeletClusterDns } from "../../../lib/remote/scripts/setKubeletClusterDns";
import { waitComponentHealthy } from "../../../lib/remote/scripts/waitComponentHealthy";
import { stopStaticPods } from "../../../lib/remote/scripts/stopStaticPods";
import { ROUTE_PROTOCOL, flannelBridgeRoutes } from "../../../lib/remote/scripts/flannelBridgeRoutes";
import { startHeldManifest } from "../../../lib/remote/scripts/startHeldManifest";
import { sha256HexOf, writeFileChecked, writeManifest } from "../../../lib/remote/scripts/writeManifest";
import { markNodeAddress } from "../../../lib/controlPlane/staticPodRestartEdit";
import { tempDir } from "../../support/tempDirs";

const FIXTURES = path.join(__dirname, "..", "..", "fixtures", "manifests");
const APISERVER = fs.readFileSync(path.join(FIXTURES, "v1.29-single-cp-kube-apiserver.yaml"), "utf8");
const KCM = fs.readFileSync(path.join(FIXTURES, "v1.29-single-cp-kube-controller-manager.yaml"), "utf8");
const BACKUP_DIR = "/var/backups/cidr-migration/2024-05-01T10-00-00Z";


function requireTool(tool: string, args: string[], hint: string): void {
  const probe = spawnSync(tool, args, { encoding: "utf8" });
  if (probe.error || probe.status !== 0) throw new Error(`${tool} is not available (${probe.error?.message ?? probe.stderr.trim()}); ${hint}`);
}

/** Every script the tests generate, so each one is also shellchecked. */
const generated: Array<{ name: string; script: string }> = [];
function track(name: string, script: string): string {
  generated.push({ name, script });
  return script;
}

// ---------------------------------------------------------------------------------------------------------------
// A fake node: ROOT (stands in for /), fake executables, and a call log outside ROOT.

const FAKES: Record<string, string> = {
  systemctl: `#!/usr/bin/env bash
printf 'systemctl %s\\n' "$*" >> "$FAKE_CALLS"
state="$FAKE_ROOT/run/fake-systemd"
case "$1" in
  stop) rm -f "$state/$2.active" ;;
  start|restart) mkdir -p "$state"; [ -e "$state/$2.active" ] || : > "$state/$2.active" ;;
  is-active) [ "$2" = --quiet ] && shift; [ -e "$state/$2.active" ] ;;
  *) echo "fake systemctl: unexpected $*" >&2; exit 2 ;;
esac
`,
  curl: `#!/usr/bin/env bash
printf 'curl %s\\n' "$*" >> "$FAKE_CALLS"
if [ -f "$FAKE_STATE/health" ]; then cat "$FAKE_STATE/health"; else echo "curl: (7) Failed to connect" >&2; exit 7; fi
`,
  kubeadm: `#!/usr/bin/env bash
printf 'kubeadm %s\\n' "$*" >> "$FAKE_CALLS"
case "$1" in
  reset)
    rm -rf "$FAKE_ROOT/etc/kubernetes/kubelet.conf" "$FAKE_ROOT/etc/kubernetes/pki" "$FAKE_ROOT/var/lib/kubelet/pki"
    rm -f "$FAKE_ROOT/run/fake-systemd/kubelet.active" ;;
  join)
    mkdir -p "$FAKE_ROOT/etc/kubernetes/pki" "$FAKE_ROOT/var/lib/kubelet/pki" "$FAKE_ROOT/run/fake-systemd"
    printf 'server: https://%s\\n' "$2" > "$FAKE_ROOT/etc/kubernetes/kubelet.conf"
    printf 'new ca\\n' > "$FAKE_ROOT/etc/kubernetes/pki/ca.crt"
    printf 'kind: KubeletConfiguration\\n' > "$FAKE_ROOT/var/lib/kubelet/config.yaml"
    printf 'cert\\n' > "$FAKE_ROOT/var/lib/kubelet/pki/kubelet-client-current.pem"
    : > "$FAKE_ROOT/run/fake-systemd/kubelet.active" ;;
  *) echo "fake kubeadm: unexpected $*" >&2; exit 2 ;;
esac
`,
};

interface RunResult {
  status: number;
  stdout: string;
  stderr: string;
}

class FakeNode {
  readonly dir = tempDir("node");
  readonly root = path.join(this.dir, "root");
  readonly bin = path.join(this.dir, "bin");
  readonly state = path.join(this.dir, "state");
  readonly callsFile = path.join(this.dir, "calls.log");

  constructor() {
    for (const d of [this.root, this.bin, this.state]) fs.mkdirSync(d, { recursive: true });
    for (const [name, body] of Object.entries(FAKES)) fs.writeFileSync(path.join(this.bin, name), body, { mode: 0o755 });
    fs.writeFileSync(this.callsFile, "");
  }

  /** Write a file at a node path (under ROOT). */
  write(nodePath: string, content: string | Buffer, mode = 0o644): void {
    const file = this.path(nodePath);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, content);
    fs.chmodSync(file, mode);
  }

  path(nodePath: string): string {
    return path.join(this.root, nodePath);
  }

  exists(nodePath: string): boolean {
    return fs.existsSync(this.path(nodePath));
  }

  read(nodePath: string): string {
    return fs.readFileSync(this.path(nodePath), "utf8");
  }

  calls(): string[] {
    return fs.readFileSync(this.callsFile, "utf8").split("\n").filter(Boolean);
  }

  run(script: string, prefix: string[] = []): RunResult {
    const file = path.join(this.dir, "step.sh");
    fs.writeFileSync(file, script, { mode: 0o700 });
    const command = [...prefix, "bash", file];
    const result = spawnSync(command[0], command.slice(1), {
      encoding: "utf8",
      env: { PATH: `${this.bin}:${process.env.PATH}`, FAKE_ROOT: this.root, FAKE_STATE: this.state, FAKE_CALLS: this.callsFile, LANG: "C" },
    });
    if (result.error) throw result.error;
    return { status: result.status ?? -1, stdout: result.stdout, stderr: result.stderr };
  }

  runOk(script: string, prefix: string[] = []): RunResult {
    const result = this.run(script, prefix);
    assert.equal(result.status, 0, `script failed (${result.status}): ${result.stderr}`);
    return result;
  }

  /** Hash of everything under ROOT: relative path, type, mode and content (not times). */
  treeHash(): string {
    const hash = createHash("sha256");
    const walk = (dir: string) => {
      for (const name of fs.readdirSync(dir).sort()) {
        const full = path.join(dir, name);
        const stat = fs.lstatSync(full);
        hash.update(`${path.relative(this.root, full)}\0${stat.mode}\0`);
        if (stat.isDirectory()) walk(full);
        else if (stat.isSymbolicLink()) hash.update(fs.readlinkSync(full));
        else hash.update(fs.readFileSync(full));
        hash.update("\0");
      }
    };
    walk(this.root);
    return hash.digest("hex");
  }

  /** Run twice: the first run must succeed; the second must succeed and leave ROOT exactly as the first left it. */
  runTwice(script: string, prefix: string[] = []): { first: RunResult; second: RunResult; changed: boolean } {
    const before = this.treeHash();
    const first = this.runOk(script, prefix);
    const afterFirst = this.treeHash();
    const second = this.runOk(script, prefix);
    assert.equal(this.treeHash(), afterFirst, "second run changed the sandbox");
    return { first, second, changed: before !== afterFirst };
  }
}

function controlPlaneNode(): FakeNode {
  const node = new FakeNode();
  node.write("/etc/kubernetes/manifests/kube-apiserver.yaml", APISERVER, 0o600);
  node.write("/etc/kubernetes/manifests/kube-controller-manager.yaml", KCM, 0o600);
  node.write("/etc/kubernetes/pki/ca.crt", "-----BEGIN CERTIFICATE-----\nfake\n");
  node.write("/etc/kubernetes/pki/ca.key", "-----BEGIN PRIVATE KEY-----\nfake\n", 0o600);
  node.write("/etc/kubernetes/pki/etcd/ca.crt", "etcd ca\n");
  return node;
}

// ---------------------------------------------------------------------------------------------------------------

describe("shellQuote", () => {
  const awkward = [
    "", " ", "plain", "two words", "'", "''", "it's", `"double"`, `mixed '"' quotes`, "$HOME", "${HOME}", "$(id -u)",
    "`id -u`", "back\\slash", "new\nline", "\n", "trailing newline\n", "tab\there", "\r\n", "!history", "*", "?[a]",
    "~", "#comment", "; rm -rf /", "a && b || c", "|", "<>", "{a,b}", "-n", "--flag=x y", "ü ☃", "%s%n",
  ];

  it("round-trips every awkward value through bash -c", () => {
    // each value quoted on its own, all in one bash (a process per value took over 20 s on a loaded machine)
    const out = execFileSync("bash", ["-c", awkward.map((value) => `printf '%s\\0' ${shellQuote(value)}`).join("; ")], { encoding: "utf8" });
    const values = out.split("\0").slice(0, -1);
    awkward.forEach((value, i) => assert.equal(values[i], value, JSON.stringify(value)));
    assert.equal(values.length, awkward.length);
  });

  it("keeps a list of values as separate words", () => {
    const out = execFileSync("bash", ["-c", `printf '%s\\0' ${shellQuoteAll(awkward)}`], { encoding: "utf8" });
    assert.deepEqual(out.split("\0").slice(0, -1), awkward);
  });

  it("quotes in POSIX single-quote style, always", () => {
    assert.equal(shellQuote(""), "''");
    assert.equal(shellQuote("safe"), "'safe'");
    assert.equal(shellQuote("it's"), `'it'\\''s'`);
    // POSIX sh, not only bash, reads it back.
    assert.equal(execFileSync("sh", ["-c", `printf '%s' ${shellQuote("it's $x")}`], { encoding: "utf8" }), "it's $x");
  });

  it("refuses a NUL byte without echoing the value", () => {
    assert.throws(() => shellQuote("secret\0value"), (e: Error) => !e.message.includes("secret") && /NUL/.test(e.message));
  });
});

describe("remoteScript builder", () => {
  before(() => requireTool("shellcheck", ["--version"], "install Debian's shellcheck (test/testbed/install.sh; tail /tmp/install.log)"));

  it("starts with the shebang and strict mode, and defines ROOT only when a host path is used", () => {
    const withPath = buildScript({ name: "demo", root: "/tmp/x" }, [sh`cat ${hostPath("/etc/hostname")}`]);
    assert.ok(withPath.startsWith("#!/usr/bin/env bash\n"));
    assert.ok(withPath.split("\n").includes("set -euo pipefail"));
    assert.ok(withPath.includes("readonly ROOT='/tmp/x'\n"));
    assert.ok(withPath.includes(`cat "$ROOT"'/etc/hostname'`));
    const withoutPath = buildScript({ name: "demo" }, [sh`true`]);
    assert.ok(!withoutPath.includes("ROOT"));
  });

  it("passes every interpolated value through shellQuote, so input never runs as code", () => {
    const dir = tempDir("quote");
    const evil = [`$(touch ${dir}/pwned)`, `\`touch ${dir}/pwned\``, `'; touch ${dir}/pwned; '`, "a\nb"];
    const script = buildScript({ name: "demo" }, [sh`printf '%s|' ${evil} ${42}`]);
    const out = execFileSync("bash", ["-c", script], { encoding: "utf8" });
    assert.equal(out, [...evil, "42"].map((v) => `${v}|`).join(""));
    assert.ok(!fs.existsSync(path.join(dir, "pwned")));
  });

  it("dedents templates, keeps backslashes for the shell, and turns \\${ into the shell's ${", () => {
    const code = sh`
      x=1
        echo "\${x}\n"
    `;
    assert.equal(code.text, `x=1\n  echo "\${x}\\n"`);
  });

  it("keeps a multi-line value intact while dedenting around it", () => {
    const code = sh`
      printf '%s' ${"line one\n      indented"}
    `;
    assert.equal(code.text, `printf '%s' 'line one\n      indented'`);
  });

  it("refuses relative and climbing paths, bad names, and fractional numbers", () => {
    assert.throws(() => hostPath("etc/x"), /not an absolute path/);
    assert.throws(() => hostPath("/etc/../root"), /without \. or \.\. parts/);
    assert.throws(() => buildScript({ name: "Bad Name" }, []), /lower-case words joined by dashes/);
    assert.throws(() => buildScript({ name: "x", root: "relative" }, [sh`true`]), /sandbox root "relative"/);
    assert.throws(() => sh`sleep ${1.5}`, /not an integer/);
  });

  it("makes ShellCode only through sh and hostPath", () => {
    assert.ok(sh`true` instanceof ShellCode);
    assert.ok(hostPath("/x").usesRoot);
  });
});

describe("step scripts in a sandbox root", function () {
  this.timeout(60000);
  before(() => {
    requireTool("shellcheck", ["--version"], "install Debian's shellcheck (test/testbed/install.sh; tail /tmp/install.log)");
    requireTool("ip", ["-V"], "install Debian's iproute2");
  });

  describe("backupControlPlane", () => {
    it("copies manifests and pki with their modes, writes checksums and the marker, then does nothing", () => {
      const node = controlPlaneNode();
      const script = track("backupControlPlane", backupControlPlane({ backupDir: BACKUP_DIR, root: node.root }));
      const { first, second, changed } = node.runTwice(script);
      assert.ok(changed);
      assert.match(first.stdout, /backed up/);
      assert.match(second.stdout, /complete already; nothing to do/);
      for (const file of ["/etc/kubernetes/manifests/kube-apiserver.yaml", "/etc/kubernetes/manifests/kube-controller-manager.yaml", "/etc/kubernetes/pki/ca.key", "/etc/kubernetes/pki/etcd/ca.crt"]) {
        assert.equal(node.read(BACKUP_DIR + file), node.read(file), file);
        assert.equal(fs.statSync(node.path(BACKUP_DIR + file)).mode & 0o777, fs.statSync(node.path(file)).mode & 0o777, file);
      }
      assert.ok(node.exists(`${BACKUP_DIR}/${BACKUP_COMPLETE_MARKER}`));
      const sums = node.read(`${BACKUP_DIR}/SHA256SUMS`);
      assert.match(sums, new RegExp(`${sha256HexOf(APISERVER)}  ./etc/kubernetes/manifests/kube-apiserver.yaml`));
      assert.ok(!node.exists(`${BACKUP_DIR}.partial`));
    });

    it("keeps the first backup when the manifests change afterwards", () => {
      const node = controlPlaneNode();
      const script = backupControlPlane({ backupDir: BACKUP_DIR, root: node.root });
      node.runOk(script);
      node.write("/etc/kubernetes/manifests/kube-apiserver.yaml", "edited\n");
      node.runOk(script);
      assert.equal(node.read(`${BACKUP_DIR}/etc/kubernetes/manifests/kube-apiserver.yaml`), APISERVER);
    });

    it("redoes a backup that an interrupted run left half-written", () => {
      const node = controlPlaneNode();
      node.write(`${BACKUP_DIR}.partial/etc/kubernetes/manifests/junk.yaml`, "half\n");
      node.runOk(backupControlPlane({ backupDir: BACKUP_DIR, root: node.root }));
      assert.ok(!node.exists(`${BACKUP_DIR}/etc/kubernetes/manifests/junk.yaml`));
      assert.ok(node.exists(`${BACKUP_DIR}/${BACKUP_COMPLETE_MARKER}`));
    });

    it("refuses a backupDir that exists without the marker, and changes nothing", () => {
      const node = controlPlaneNode();
      node.write(`${BACKUP_DIR}/someone-elses.txt`, "mine\n");
      const before = node.treeHash();
      const result = node.run(backupControlPlane({ backupDir: BACKUP_DIR, root: node.root }));
      assert.equal(result.status, 1);
      assert.match(result.stderr, /exists but holds no complete backup .*move it aside or choose another backupDir/);
      assert.equal(node.treeHash(), before);
    });

    it("refuses, at generation time, a backupDir inside the manifests directory", () => {
      assert.throws(() => backupControlPlane({ backupDir: "/etc/kubernetes/manifests/backup" }), (e: Error) => e instanceof UserError && /must not be \/ or overlap manifestsDir/.test(e.message));
      assert.throws(() => backupControlPlane({ backupDir: "var/backups" }), /backupDir "var\/backups" is not an absolute path/);
    });
  });

  describe("writeManifest and restoreManifest", () => {
    const manifest = "/etc/kubernetes/manifests/kube-apiserver.yaml";
    const edited = setFlags(APISERVER, { "service-cluster-ip-range": "10.112.0.0/12" }).text;
    const writeScript = (root: string) =>
      writeManifest({ path: manifest, expectedSha256: sha256HexOf(APISERVER), newContentBase64: Buffer.from(edited).toString("base64"), backupDir: BACKUP_DIR, root });

    it("writes the new content in place, keeps mode, backs up the old one, leaves no temp file, then is a no-op", () => {
      const node = controlPlaneNode();
      const { first, second } = node.runTwice(track("writeManifest", writeScript(node.root)));
      assert.equal(node.read(manifest), edited);
      assert.equal(fs.statSync(node.path(manifest)).mode & 0o777, 0o600);
      assert.equal(node.read(BACKUP_DIR + manifest), APISERVER);
      assert.deepEqual(fs.readdirSync(node.path("/etc/kubernetes/manifests")).sort(), ["kube-apiserver.yaml", "kube-controller-manager.yaml"]);
      assert.match(first.stdout, /wrote .*kube-apiserver\.yaml/);
      assert.match(second.stdout, /already has the new content; nothing to do/);
      assert.deepEqual(readFlags(node.read(manifest)).get("service-cluster-ip-range"), ["10.112.0.0/12"]);
    });

    it("keeps the pre-migration original as the backup when the same file is edited again later", () => {
      // The KCM case: --allocate-node-cidrs=false for the rollout, then true again afterwards.
      const node = controlPlaneNode();
      node.runOk(writeScript(node.root));
      const again = setFlags(edited, { "secure-port": "6444" }).text;
      node.runOk(writeFileChecked({ path: manifest, currentContent: edited, newContent: again, backupDir: BACKUP_DIR, root: node.root }));
      assert.equal(node.read(manifest), again);
      assert.equal(node.read(BACKUP_DIR + manifest), APISERVER);
    });

    it("writes bytes exactly: CRLF and no final newline survive", () => {
      const node = controlPlaneNode();
      const content = "a: 1\r\nb: 2";
      node.runOk(writeFileChecked({ path: manifest, currentContent: APISERVER, newContent: content, backupDir: BACKUP_DIR, root: node.root }));
      assert.equal(node.read(manifest), content);
    });

    it("refuses when the file changed since the edit was planned, and changes nothing", () => {
      const node = controlPlaneNode();
      node.write(manifest, APISERVER.replace("--secure-port=6443", "--secure-port=7443"), 0o600);
      const before = node.treeHash();
      const result = node.run(writeScript(node.root));
      assert.equal(result.status, 1);
      assert.match(result.stderr, /^cidr-migration write-manifest: .*kube-apiserver\.yaml changed since the edit was planned \(sha256 [0-9a-f]{64}, planned from [0-9a-f]{64}\); re-read the file and plan again\n$/);
      assert.equal(node.treeHash(), before);
    });

    it("refuses a missing file", () => {
      const node = new FakeNode();
      const result = node.run(writeScript(node.root));
      assert.equal(result.status, 1);
      assert.match(result.stderr, /does not exist; nothing to edit/);
    });

    it("restores the backup, keeps the failed file for the post-mortem, then is a no-op", () => {
      const node = controlPlaneNode();
      node.runOk(backupControlPlane({ backupDir: BACKUP_DIR, root: node.root }));
      node.runOk(writeScript(node.root));
      const { second } = node.runTwice(track("restoreManifest", restoreManifest({ backupDir: BACKUP_DIR, path: manifest, root: node.root })));
      assert.equal(node.read(manifest), APISERVER);
      assert.equal(fs.statSync(node.path(manifest)).mode & 0o777, 0o600);
      assert.equal(node.read(`${BACKUP_DIR}/failed${manifest}`), edited);
      assert.match(second.stdout, /already equals its backup; nothing to do/);
    });

    it("restore refuses without a backup", () => {
      const node = controlPlaneNode();
      const result = node.run(restoreManifest({ backupDir: BACKUP_DIR, path: manifest, root: node.root }));
      assert.equal(result.status, 1);
      assert.match(result.stderr, /no backup at .*; cannot restore/);
    });

    it("validates its inputs at generation time", () => {
      assert.throws(() => writeManifest({ path: manifest, expectedSha256: "abc", newContentBase64: "", backupDir: BACKUP_DIR }), /expectedSha256 "abc" is not a sha256/);
      assert.throws(() => writeManifest({ path: manifest, expectedSha256: "0".repeat(64), newContentBase64: "no base64!", backupDir: BACKUP_DIR }), /newContentBase64 is not canonical base64/);
    });
  });

  describe("waitComponentHealthy", () => {
    const flags = ["--service-cluster-ip-range=10.112.0.0/12", "--allocate-node-cidrs=true"];
    const script = (root: string, timeoutSeconds = 1) =>
      waitComponentHealthy({ component: "kube-apiserver", url: "https://127.0.0.1:6443/healthz", expectFlags: flags, timeoutSeconds, intervalSeconds: 1, root });
    const fakeProcess = (node: FakeNode, pid: number, argv: string[]) => node.write(`/proc/${pid}/cmdline`, `${argv.join("\0")}\0`);

    it("succeeds when health says ok and every apiserver process carries the flags (joined, separate, bare)", () => {
      const node = new FakeNode();
      fakeProcess(node, 4242, ["/usr/local/bin/kube-apiserver", "--service-cluster-ip-range", "10.112.0.0/12", "--allocate-node-cidrs"]);
      fakeProcess(node, 4343, ["kube-apiserver", "--allocate-node-cidrs=true", "--service-cluster-ip-range=10.112.0.0/12"]);
      fakeProcess(node, 77, ["etcd", "--data-dir=/var/lib/etcd"]);
      node.write("/proc/1/cmdline", "");
      fs.writeFileSync(path.join(node.state, "health"), "ok");
      const { first } = node.runTwice(track("waitComponentHealthy", script(node.root)));
      assert.match(first.stdout, /kube-apiserver is healthy and runs with --service-cluster-ip-range=10\.112\.0\.0\/12/);
      assert.ok(node.calls().every((c) => c.startsWith("curl -k ") && c.endsWith("https://127.0.0.1:6443/healthz")));
    });

    it("fails closed while an apiserver still runs the old flag, even if health is ok", () => {
      const node = new FakeNode();
      fakeProcess(node, 10, ["kube-apiserver", "--service-cluster-ip-range=10.112.0.0/12", "--allocate-node-cidrs=true"]);
      fakeProcess(node, 11, ["kube-apiserver", "--service-cluster-ip-range=10.96.0.0/12", "--allocate-node-cidrs=true"]);
      fs.writeFileSync(path.join(node.state, "health"), "ok");
      const result = node.run(script(node.root));
      assert.equal(result.status, 1);
      assert.match(result.stderr, /kube-apiserver not healthy with .* after 1s: 2 process\(es\), 1 without the flags, health answer 'ok'/);
    });

    it("fails closed when no process runs or health is not ok", () => {
      const node = new FakeNode();
      const noProcess = node.run(script(node.root));
      assert.equal(noProcess.status, 1);
      assert.match(noProcess.stderr, /0 process\(es\), 0 without the flags, health answer 'curl: \(7\) Failed to connect'/);
      fakeProcess(node, 10, ["kube-apiserver", ...flags]);
      fs.writeFileSync(path.join(node.state, "health"), "[-]etcd failed");
      const unhealthy = node.run(script(node.root));
      assert.equal(unhealthy.status, 1);
      assert.match(unhealthy.stderr, /1 process\(es\), 0 without the flags, health answer '\[-\]etcd failed'/);
    });

    it("validates its inputs at generation time", () => {
      assert.throws(() => waitComponentHealthy({ component: "kube-proxy" as "kube-apiserver", url: "https://x/healthz", expectFlags: flags, timeoutSeconds: 5 }), /component "kube-proxy" is not one of kube-apiserver, kube-controller-manager, kube-scheduler, etcd/);
      assert.throws(() => waitComponentHealthy({ component: "kube-apiserver", url: "file:///etc/passwd", expectFlags: flags, timeoutSeconds: 5 }), /url "file:\/\/\/etc\/passwd" is not an http\(s\) URL/);
      assert.throws(() => waitComponentHealthy({ component: "kube-apiserver", url: "https://x/healthz", expectFlags: ["cluster-cidr"], timeoutSeconds: 5 }), /expectFlags\[0\] "cluster-cidr" is not a --name=value flag/);
      assert.throws(() => waitComponentHealthy({ component: "kube-apiserver", url: "https://x/healthz", expectFlags: flags, timeoutSeconds: 0 }), /timeoutSeconds 0 is not a positive whole number/);
    });
  });

  describe("stopStaticPods and startHeldManifest (services.strategy etcd-rewrite)", () => {
    const HELD = "/etc/kubernetes/cidr-migration-held/run-1";
    const MANIFESTS = "/etc/kubernetes/manifests";
    const fakeProcess = (node: FakeNode, pid: number, argv: string[]) => node.write(`/proc/${pid}/cmdline`, `${argv.join("\0")}\0`);
    const stop = (node: FakeNode, timeoutSeconds = 2) =>
      track("stopStaticPods", stopStaticPods({ components: ["kube-apiserver", "kube-controller-manager"], heldDir: HELD, timeoutSeconds, root: node.root }));
    const start = (node: FakeNode, heldContent = APISERVER) => startHeldManifest({
      component: "kube-apiserver",
      path: `${MANIFESTS}/kube-apiserver.yaml`,
      heldDir: HELD,
      heldContent,
      flags: { "service-cluster-ip-range": "10.112.0.0/12" },
      healthUrl: "https://127.0.0.1:6443/healthz",
      timeoutSeconds: 1,
      root: node.root,
    });

    it("stop: moves both manifests out of the manifests directory, waits until neither runs, then does nothing", () => {
      const node = controlPlaneNode();
      const { first, second } = node.runTwice(stop(node));
      assert.equal(node.exists(`${MANIFESTS}/kube-apiserver.yaml`), false);
      assert.equal(node.exists(`${MANIFESTS}/kube-controller-manager.yaml`), false);
      assert.equal(node.read(`${HELD}/kube-apiserver.yaml`), APISERVER);
      assert.equal(node.read(`${HELD}/kube-controller-manager.yaml`), KCM);
      assert.match(first.stdout, /moved .*kube-apiserver\.yaml out/);
      assert.match(second.stdout, /kube-apiserver is held already/);
    });

    it("stop fails closed while the apiserver still runs, its manifest staying held; and refuses a node without the manifests", () => {
      const node = controlPlaneNode();
      fakeProcess(node, 4242, ["/usr/local/bin/kube-apiserver", "--etcd-servers=https://127.0.0.1:2379"]);
      const running = node.run(stop(node, 1));
      assert.equal(running.status, 1);
      assert.match(running.stderr, /kube-apiserver still runs 1s after its manifest was moved out; .*stays in .*cidr-migration-held\/run-1/);
      assert.ok(node.exists(`${HELD}/kube-apiserver.yaml`));
      const bare = new FakeNode();
      const missing = bare.run(stop(bare));
      assert.equal(missing.status, 1);
      assert.match(missing.stderr, /does not run from a static-pod manifest here \(for services\.strategy etcd-rewrite: use recreate instead\)/);
    });

    it("stop refuses when someone put a different manifest back while it was held", () => {
      const node = controlPlaneNode();
      node.runOk(stop(node));
      node.write(`${MANIFESTS}/kube-apiserver.yaml`, APISERVER.replace("10.96.0.0/12", "10.0.0.0/16"), 0o600);
      const result = node.run(stop(node));
      assert.equal(result.status, 1);
      assert.match(result.stderr, /is back and differs from the held/);
    });

    it("start: writes the held manifest back with the new flag only, removes the held copy, waits until healthy on it; a re-run only waits", () => {
      const node = controlPlaneNode();
      node.runOk(stop(node));
      fakeProcess(node, 10, ["kube-apiserver", "--service-cluster-ip-range=10.112.0.0/12"]);
      fs.writeFileSync(path.join(node.state, "health"), "ok");
      const step = start(node);
      assert.deepEqual(step.changes.map((c) => [c.flag, c.after]), [["service-cluster-ip-range", "10.112.0.0/12"]]);
      const { first } = node.runTwice(track("startHeldManifest", step.script));
      const written = node.read(`${MANIFESTS}/kube-apiserver.yaml`);
      assert.equal(written, setFlags(APISERVER, { "service-cluster-ip-range": "10.112.0.0/12" }, { container: "kube-apiserver" }).text);
      assert.deepEqual(readFlags(written, { container: "kube-apiserver" }).get("service-cluster-ip-range"), ["10.112.0.0/12"]);
      assert.equal(fs.statSync(node.path(`${MANIFESTS}/kube-apiserver.yaml`)).mode & 0o777, 0o600, "the held file's mode");
      assert.equal(node.exists(`${HELD}/kube-apiserver.yaml`), false);
      assert.deepEqual(fs.readdirSync(node.path(MANIFESTS)).sort(), ["kube-apiserver.yaml"], "no temp file left, KCM still held");
      assert.match(first.stdout, /wrote .*kube-apiserver\.yaml with the new flags/);
    });

    it("start never puts the old manifest back: a held copy changed since it was read is refused, an unhealthy start fails naming the undo", () => {
      const changed = controlPlaneNode();
      changed.runOk(stop(changed));
      changed.write(`${HELD}/kube-apiserver.yaml`, `${APISERVER}# edited\n`, 0o600);
      const refused = changed.run(start(changed).script);
      assert.equal(refused.status, 1);
      assert.match(refused.stderr, /changed since it was read before the stop/);
      assert.equal(changed.exists(`${MANIFESTS}/kube-apiserver.yaml`), false, "nothing started");

      const unhealthy = controlPlaneNode();
      unhealthy.runOk(stop(unhealthy));
      const failed = unhealthy.run(start(unhealthy).script);
      assert.equal(failed.status, 1);
      assert.match(failed.stderr, /did not become healthy on its new flags .* undo the whole run with cidr-migration restore/);
      assert.deepEqual(readFlags(unhealthy.read(`${MANIFESTS}/kube-apiserver.yaml`), { container: "kube-apiserver" }).get("service-cluster-ip-range"), ["10.112.0.0/12"], "the new manifest stays");
    });

    it("validate their inputs at generation time", () => {
      assert.throws(() => stopStaticPods({ components: [], heldDir: HELD }), /components must list some of kube-apiserver, kube-controller-manager/);
      assert.throws(() => stopStaticPods({ components: ["kube-apiserver"], heldDir: `${MANIFESTS}/held` }), /heldDir/);
      assert.throws(() => startHeldManifest({ component: "kube-apiserver", path: "relative.yaml", heldDir: HELD, heldContent: APISERVER, flags: {}, healthUrl: "https://x/healthz", timeoutSeconds: 1 }), /path/);
    });
  });

  describe("cleanupCni", () => {
    const netns = `cidr-migration-test-${process.pid}`;
    const inNetns = ["ip", "netns", "exec", netns];
    const linkExists = (name: string) => spawnSync("ip", ["netns", "exec", netns, "ip", "link", "show", "dev", name]).status === 0;
    const addFlannelLinks = () => {
      // The kernel here has no `dummy` link type; flannel's own types (a bridge and a VXLAN device) are as real.
      execFileSync("ip", ["netns", "exec", netns, "ip", "link", "add", "cni0", "type", "bridge"]);
      execFileSync("ip", ["netns", "exec", netns, "ip", "link", "add", "flannel.1", "type", "vxlan", "id", "1", "dstport", "8472"]);
      execFileSync("ip", ["netns", "exec", netns, "ip", "addr", "add", "10.244.3.1/24", "dev", "cni0"]);
    };
    const flannelNode = () => {
      const node = new FakeNode();
      node.write("/etc/cni/net.d/10-flannel.conflist", '{"name":"cbr0","plugins":[{"type":"flannel","delegate":{"isDefaultGateway":true}}]}\n');
      node.write("/etc/cni/net.d/20-bridge.conf", '{"type":"bridge","ipam":{"type":"host-local","subnet":"10.244.3.0/24"}}\n');
      node.write("/etc/cni/net.d/30-other.conf", '{"type":"macvlan","ipam":{"type":"host-local","subnet":"192.168.50.0/24"}}\n');
      node.write("/run/flannel/subnet.env", "FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.3.1/24\n");
      node.write("/var/lib/cni/networks/cbr0/10.244.3.5", "containerid\n");
      node.write("/var/lib/cni/flannel/0123abcd", "{}\n");
      return node;
    };

    before(() => execFileSync("ip", ["netns", "add", netns]));
    after(() => {
      spawnSync("ip", ["netns", "delete", netns]);
    });

    it("flannel: deletes the real cni0 and flannel.1 links, subnet.env and CNI state; a second run succeeds and changes nothing", () => {
      addFlannelLinks();
      assert.ok(linkExists("cni0") && linkExists("flannel.1"));
      const node = flannelNode();
      const script = track("cleanupCni-flannel", cleanupCni({ cni: "flannel", oldPodCidrs: ["10.244.0.0/16", "10.244.3.0/24"], backupDir: BACKUP_DIR, root: node.root }));
      const { first, second } = node.runTwice(script, inNetns);
      assert.ok(!linkExists("cni0"), "cni0 is gone");
      assert.ok(!linkExists("flannel.1"), "flannel.1 is gone");
      assert.ok(linkExists("lo"), "other links stay");
      assert.match(first.stdout, /deleted link cni0/);
      assert.match(first.stdout, /deleted link flannel\.1/);
      assert.ok(!/deleted link/.test(second.stdout));
      assert.ok(!node.exists("/run/flannel/subnet.env"));
      assert.ok(!node.exists("/var/lib/cni/networks"));
      assert.ok(!node.exists("/var/lib/cni/flannel"));
      assert.ok(!node.exists("/etc/cni/net.d/20-bridge.conf"), "stale config naming the old subnet removed");
      assert.ok(node.exists("/etc/cni/net.d/10-flannel.conflist"), "config without the old range kept");
      assert.ok(node.exists("/etc/cni/net.d/30-other.conf"), "config of another range kept");
      assert.match(node.read(`${BACKUP_DIR}/etc/cni/net.d/20-bridge.conf`), /10\.244\.3\.0\/24/);
      assert.match(node.read(`${BACKUP_DIR}/run/flannel/subnet.env`), /FLANNEL_SUBNET=10\.244\.3\.1\/24/);
    });

    it("calico: removes only stale configs and leaves links alone", () => {
      addFlannelLinks();
      const node = flannelNode();
      node.write("/etc/cni/net.d/10-calico.conflist", '{"plugins":[{"type":"calico","ipam":{"type":"calico-ipam"}}]}\n');
      node.write("/etc/cni/net.d/99-old.conflist", '{"plugins":[{"type":"calico","ipam":{"type":"host-local","ranges":[[{"subnet":"10.244.0.0/16"}]]}}]}\n');
      const script = track("cleanupCni-calico", cleanupCni({ cni: "calico", oldPodCidrs: ["10.244.0.0/16"], backupDir: BACKUP_DIR, root: node.root }));
      node.runTwice(script, inNetns);
      assert.ok(linkExists("cni0") && linkExists("flannel.1"));
      assert.ok(!node.exists("/etc/cni/net.d/99-old.conflist"));
      assert.ok(node.exists("/etc/cni/net.d/10-calico.conflist"));
      assert.ok(node.exists("/run/flannel/subnet.env"), "not flannel: its files are not touched");
      execFileSync("ip", ["netns", "exec", netns, "ip", "link", "delete", "cni0"]);
      execFileSync("ip", ["netns", "exec", netns, "ip", "link", "delete", "flannel.1"]);
    });

    it("cilium and none: stale configs only, on a node without a CNI directory too", () => {
      for (const cni of ["cilium", "none"] as const) {
        const node = new FakeNode();
        const script = track(`cleanupCni-${cni}`, cleanupCni({ cni, oldPodCidrs: ["10.0.0.0/8"], backupDir: BACKUP_DIR, root: node.root }));
        const { changed } = node.runTwice(script);
        assert.equal(changed, false);
      }
    });

    it("validates its inputs at generation time", () => {
      assert.throws(() => cleanupCni({ cni: "weave" as "none", oldPodCidrs: ["10.0.0.0/8"], backupDir: BACKUP_DIR }), /cni "weave" is not one of calico, flannel, cilium, none/);
      assert.throws(() => cleanupCni({ cni: "flannel", oldPodCidrs: [], backupDir: BACKUP_DIR }), /oldPodCidrs is empty/);
      assert.throws(() => cleanupCni({ cni: "flannel", oldPodCidrs: ["10.244.0.1/16"], backupDir: BACKUP_DIR }), /has host bits set: did you mean 10\.244\.0\.0\/16/);
    });
  });

  describe("flannelBridgeRoutes (etcd-rewrite rollout with Flannel), on a real flannel.1 in a network namespace", () => {
    const netns = `cidr-migration-routes-${process.pid}`;
    const ns = (...args: string[]) => execFileSync("ip", ["netns", "exec", netns, ...args], { encoding: "utf8" });
    const NODES = [
      { name: "cp-1", oldSubnet: "10.244.0.0/24", newSubnet: "10.48.0.0/24" },
      { name: "worker-1", oldSubnet: "10.244.1.0/24", newSubnet: "10.48.1.0/24" },
      { name: "worker-2", oldSubnet: "10.244.2.0/24", newSubnet: "10.48.2.0/24" },
    ];
    const script = (self: string, action: "unrolled" | "rolled" | "remove") => track(`flannelBridgeRoutes-${action}`, flannelBridgeRoutes({ action, self, nodes: NODES, waitSeconds: 2 }));
    // `ip route show proto N` lists the routes of that protocol, without repeating it
    const ours = () => ns("ip", "-4", "route", "show", "proto", String(ROUTE_PROTOCOL)).split("\n").map((l) => l.trim()).filter(Boolean).sort();
    /** flannel.1 as flanneld leaves it: its own gateway address, and a permanent neighbour per other node's gateway. */
    const flannelLink = (address: string, gateways: string[]) => {
      spawnSync("ip", ["netns", "exec", netns, "ip", "link", "delete", "flannel.1"]);
      ns("ip", "link", "add", "flannel.1", "type", "vxlan", "id", "1", "dstport", "8472");
      ns("ip", "addr", "add", `${address}/32`, "dev", "flannel.1");
      ns("ip", "link", "set", "flannel.1", "up");
      gateways.forEach((gw, i) => ns("ip", "neigh", "replace", gw, "lladdr", `02:00:00:00:00:0${i + 1}`, "dev", "flannel.1", "nud", "permanent"));
    };

    before(() => execFileSync("ip", ["netns", "add", netns]));
    after(() => {
      spawnSync("ip", ["netns", "delete", netns]);
    });

    it("a node not yet rolled routes the others' new subnets through their old gateways; a rolled node the others' old subnets through their new gateways; remove takes only ours", () => {
      const node = new FakeNode();
      flannelLink("10.244.1.0", ["10.244.0.0", "10.244.2.0"]);
      ns("ip", "route", "add", "10.244.0.0/24", "via", "10.244.0.0", "dev", "flannel.1", "onlink");
      const before = node.runTwice(script("worker-1", "unrolled"), ["ip", "netns", "exec", netns]);
      assert.match(before.first.stdout, /node on its old subnet: 2 route\(s\)/);
      assert.deepEqual(ours(), ["10.48.0.0/24 via 10.244.0.0 dev flannel.1 onlink", "10.48.2.0/24 via 10.244.2.0 dev flannel.1 onlink"]);

      // rolled: flanneld recreated flannel.1 on the new subnet and programmed the others' new gateways
      flannelLink("10.48.1.0", ["10.48.0.0", "10.48.2.0"]);
      const rolled = node.runOk(script("worker-1", "rolled"), ["ip", "netns", "exec", netns]);
      assert.match(rolled.stdout, /rolled node: 2 route\(s\)/);
      assert.deepEqual(ours(), ["10.244.0.0/24 via 10.48.0.0 dev flannel.1 onlink", "10.244.2.0/24 via 10.48.2.0 dev flannel.1 onlink"]);

      ns("ip", "route", "add", "10.48.0.0/24", "via", "10.48.0.0", "dev", "flannel.1", "onlink");
      node.runTwice(script("worker-1", "remove"), ["ip", "netns", "exec", netns]);
      assert.deepEqual(ours(), []);
      assert.match(ns("ip", "-4", "route", "show"), /10\.48\.0\.0\/24 via 10\.48\.0\.0 dev flannel\.1 onlink/, "flanneld's own routes stay");
    });

    it("fails closed, naming the node, while flanneld has not programmed a gateway or flannel.1 is not yet on this side's subnet", () => {
      const node = new FakeNode();
      flannelLink("10.48.1.0", ["10.48.0.0"]);
      const missing = node.run(script("worker-1", "rolled"), ["ip", "netns", "exec", netns]);
      assert.equal(missing.status, 1);
      assert.match(missing.stderr, /flanneld has not programmed worker-2's gateway 10\.48\.2\.0 on flannel\.1 after 2s/);
      // a rolled node whose old flanneld still holds the old flannel.1: wait for the restarted one
      flannelLink("10.244.1.0", ["10.244.0.0", "10.244.2.0"]);
      const early = node.run(script("worker-1", "rolled"), ["ip", "netns", "exec", netns]);
      assert.match(early.stderr, /flannel\.1 does not carry this node's gateway 10\.48\.1\.0 after 2s/);
      assert.deepEqual(ours(), [], "nothing routed from the wrong side");
      assert.throws(() => flannelBridgeRoutes({ action: "rolled", self: "nobody", nodes: NODES }), /self "nobody" is not among the nodes/);
    });
  });

  describe("kubeletReregister", () => {
    const workerNode = () => {
      const node = new FakeNode();
      node.write("/var/lib/kubelet/pki/kubelet-client-current.pem", "client cert and key\n", 0o600);
      node.write("/var/lib/kubelet/pki/kubelet.crt", "serving\n");
      node.write("/var/lib/kubelet/config.yaml", "kind: KubeletConfiguration\nclusterDNS:\n- 10.96.0.10\n");
      node.write("/var/lib/kubelet/kubeadm-flags.env", "KUBELET_KUBEADM_ARGS=\n");
      node.write("/var/lib/kubelet/cpu_manager_state", '{"policyName":"static","defaultCpuSet":"0-3"}');
      node.write("/var/lib/kubelet/memory_manager_state", '{"policyName":"None"}');
      node.write("/var/lib/kubelet/pods/0a1b/volumes/kubernetes.io~empty-dir/data/file", "data\n");
      node.write("/run/fake-systemd/kubelet.active", "");
      return node;
    };

    it("stop: keeps the client cert, config and pods; clears the checkpoints (backed up); stops kubelet; idempotent", () => {
      const node = workerNode();
      const { stop } = kubeletReregister({ backupDir: BACKUP_DIR, root: node.root });
      const { changed } = node.runTwice(track("kubeletReregister-stop", stop));
      assert.ok(changed);
      assert.deepEqual(node.calls().filter((c) => c === "systemctl stop kubelet").length, 2);
      assert.ok(!node.exists("/run/fake-systemd/kubelet.active"), "kubelet stopped");
      assert.equal(node.read("/var/lib/kubelet/pki/kubelet-client-current.pem"), "client cert and key\n");
      for (const kept of ["/var/lib/kubelet/pki/kubelet.crt", "/var/lib/kubelet/config.yaml", "/var/lib/kubelet/kubeadm-flags.env", "/var/lib/kubelet/pods/0a1b/volumes/kubernetes.io~empty-dir/data/file"]) {
        assert.ok(node.exists(kept), kept);
      }
      for (const cleared of ["cpu_manager_state", "memory_manager_state"]) {
        assert.ok(!node.exists(`/var/lib/kubelet/${cleared}`), cleared);
        assert.ok(node.exists(`${BACKUP_DIR}/var/lib/kubelet/${cleared}`), `${cleared} backed up`);
      }
    });

    it("start: starts kubelet and checks it is active; idempotent", () => {
      const node = workerNode();
      const { stop, start } = kubeletReregister({ backupDir: BACKUP_DIR, root: node.root });
      node.runOk(stop);
      node.runTwice(track("kubeletReregister-start", start));
      assert.ok(node.exists("/run/fake-systemd/kubelet.active"));
    });

    it("stop refuses before touching anything when the client cert is missing", () => {
      const node = workerNode();
      fs.rmSync(node.path("/var/lib/kubelet/pki/kubelet-client-current.pem"));
      const before = node.treeHash();
      const result = node.run(kubeletReregister({ backupDir: BACKUP_DIR, root: node.root }).stop);
      assert.equal(result.status, 1);
      assert.match(result.stderr, /kubelet-client-current\.pem is missing: .*use the kubeadm-rejoin strategy/);
      assert.deepEqual(node.calls(), []);
      assert.equal(node.treeHash(), before);
    });
  });

  describe("kubeadmRejoin", () => {
    const token = new Sensitive("abcdef.0123456789abcdef");
    const input = (root: string) => ({
      endpoint: "10.0.0.10:6443",
      token,
      caCertHash: `sha256:${"ab".repeat(32)}`,
      rejoinId: "migration-2024-05-01",
      backupDir: BACKUP_DIR,
      nodeName: "worker-1",
      root,
    });
    const workerNode = () => {
      const node = new FakeNode();
      node.write("/etc/kubernetes/kubelet.conf", "server: https://10.0.0.9:6443\n", 0o600);
      node.write("/etc/kubernetes/pki/ca.crt", "old ca\n");
      node.write("/var/lib/kubelet/config.yaml", "kind: KubeletConfiguration\nclusterDNS:\n- 10.96.0.10\n");
      node.write("/var/lib/kubelet/kubeadm-flags.env", "KUBELET_KUBEADM_ARGS=\n");
      node.write("/var/lib/kubelet/cpu_manager_state", "{}");
      node.write("/var/lib/kubelet/pki/kubelet-client-current.pem", "old cert\n", 0o600);
      node.write("/etc/cni/net.d/10-flannel.conflist", "{}\n");
      node.write("/run/fake-systemd/kubelet.active", "");
      return node;
    };

    it("returns the script as a Sensitive, since it carries the token", () => {
      const script = kubeadmRejoin(input("/"));
      assert.equal(String(script), "[secret]");
      assert.equal(JSON.stringify({ script }), '{"script":"[secret]"}');
      assert.ok(script.reveal("rejoin script").includes("'abcdef.0123456789abcdef'"));
    });

    it("backs up, resets, empties kubelet and CNI dirs, joins, marks; a second run does nothing", () => {
      const node = workerNode();
      const script = track("kubeadmRejoin", kubeadmRejoin(input(node.root)).reveal("rejoin script"));
      const { first, second } = node.runTwice(script);
      assert.deepEqual(node.calls(), [
        "kubeadm reset -f",
        `kubeadm join 10.0.0.10:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:${"ab".repeat(32)} --node-name worker-1`,
      ]);
      for (const output of [first.stdout, first.stderr, second.stdout, second.stderr]) assert.ok(!output.includes("abcdef.0123456789abcdef"), "token never printed");
      assert.equal(node.read("/etc/kubernetes/kubelet.conf"), "server: https://10.0.0.10:6443\n");
      assert.deepEqual(fs.readdirSync(node.path("/etc/cni/net.d")), []);
      assert.ok(!node.exists("/var/lib/kubelet/cpu_manager_state"), "kubelet dir emptied before the join");
      assert.equal(node.read(REJOIN_MARKER), "migration-2024-05-01\n");
      assert.equal(node.read(`${BACKUP_DIR}/etc/kubernetes/kubelet.conf`), "server: https://10.0.0.9:6443\n");
      assert.equal(node.read(`${BACKUP_DIR}/etc/kubernetes/pki/ca.crt`), "old ca\n");
      assert.equal(node.read(`${BACKUP_DIR}/etc/cni/net.d/10-flannel.conflist`), "{}\n");
      assert.match(node.read(`${BACKUP_DIR}/var/lib/kubelet/config.yaml`), /10\.96\.0\.10/);
      assert.match(second.stdout, /already rejoined for migration-2024-05-01; nothing to do/);
    });

    // real mounts, in a mount namespace of their own: /var/lib/kubelet as its own filesystem, or a volume inside it
    const mountedAt = (node: FakeNode, where: string) =>
      ["unshare", "--mount", "--propagation", "private", "sh", "-c", 'mkdir -p "$0" && mount -t tmpfs kubelet-test "$0" && touch "$0/kept-by-tmpfs" && exec "$@"', node.path(where)];

    it("empties /var/lib/kubelet when it is a filesystem of its own (a data disk)", () => {
      const node = workerNode();
      const result = node.run(kubeadmRejoin(input(node.root)).reveal("rejoin script"), mountedAt(node, "/var/lib/kubelet"));
      assert.equal(result.status, 0, result.stderr);
      assert.ok(node.calls().some((c) => c.startsWith("kubeadm join")));
    });

    it("refuses to empty /var/lib/kubelet while a volume is still mounted inside it, before the join", () => {
      const node = workerNode();
      const result = node.run(kubeadmRejoin(input(node.root)).reveal("rejoin script"), mountedAt(node, "/var/lib/kubelet/pods/p1/volumes/data"));
      assert.equal(result.status, 1);
      assert.match(result.stderr, /still mounted below .*\/var\/lib\/kubelet after kubeadm reset: .*pods\/p1\/volumes\/data; unmount, then re-run/);
      assert.ok(!node.calls().some((c) => c.startsWith("kubeadm join")), "no join");
      assert.ok(node.exists("/var/lib/kubelet/cpu_manager_state"), "nothing emptied");
    });

    it("passes the preflight checks the node's first join skipped (a cgroup v1 node's SystemVerification), and refuses anything else", () => {
      const node = workerNode();
      node.runOk(kubeadmRejoin({ ...input(node.root), ignorePreflightErrors: ["SystemVerification", "FileAvailable--etc-kubernetes-kubelet.conf"] }).reveal("rejoin script"));
      assert.match(node.calls()[1], / --ignore-preflight-errors=SystemVerification,FileAvailable--etc-kubernetes-kubelet\.conf$/);
      assert.throws(() => kubeadmRejoin({ ...input("/"), ignorePreflightErrors: ["all; rm -rf /"] }), /ignorePreflightErrors/);
    });

    it("refuses a control-plane node before running kubeadm", () => {
      const node = workerNode();
      node.write("/etc/kubernetes/manifests/etcd.yaml", "kind: Pod\n");
      const before = node.treeHash();
      const result = node.run(kubeadmRejoin(input(node.root)).reveal("rejoin script"));
      assert.equal(result.status, 1);
      assert.match(result.stderr, /refusing to kubeadm reset a control-plane node .*etcd\.yaml exists\); use the reregister strategy/);
      assert.deepEqual(node.calls(), []);
      assert.equal(node.treeHash(), before);
    });

    it("a control-plane node (controlPlane given): backed up with its certificates, reset (its member left before), its etcd data dir emptied, joined as a control-plane node with the certificates' key, never printed", () => {
      const key = "0f".repeat(32);
      const node = workerNode();
      node.write("/etc/kubernetes/manifests/etcd.yaml", "kind: Pod\n");
      node.write("/etc/kubernetes/pki/etcd/ca.key", "etcd ca key\n", 0o600);
      node.write("/data/etcd/member/snap/db", "old member data");
      const cp = { ...input(node.root), nodeName: "cp-2", controlPlane: { certificateKey: new Sensitive(key), advertiseAddress: "10.0.0.12", etcdDataDir: "/data/etcd" } };
      const script = track("kubeadmRejoin-control-plane", kubeadmRejoin(cp).reveal("rejoin script"));
      const { first, second } = node.runTwice(script);
      assert.deepEqual(node.calls(), [
        "kubeadm reset -f --skip-phases=remove-etcd-member", // its member left through etcd, before (ControlPlaneRejoin)
        `kubeadm join 10.0.0.10:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:${"ab".repeat(32)} --certificate-key ${key} --control-plane --apiserver-advertise-address 10.0.0.12 --node-name cp-2`,
      ]);
      for (const output of [first.stdout, first.stderr, second.stdout, second.stderr]) assert.ok(!output.includes(key) && !output.includes("abcdef.0123456789abcdef"), "neither key nor token printed");
      assert.deepEqual(fs.readdirSync(node.path("/data/etcd")), [], "the removed member's data is gone before the join");
      assert.equal(node.read(`${BACKUP_DIR}/etc/kubernetes/pki/etcd/ca.key`), "etcd ca key\n", "its certificates backed up");
      assert.match(second.stdout, /already rejoined for migration-2024-05-01; nothing to do/);
      // the key is a credential: refused without quoting it
      assert.throws(() => kubeadmRejoin({ ...cp, controlPlane: { ...cp.controlPlane, certificateKey: new Sensitive("Not-A-Key-Secret") } }),
        (e: Error) => /certificateKey \(value hidden\)/.test(e.message) && !e.message.includes("Not-A-Key-Secret"));
    });

    it("validates inputs without printing the token", () => {
      assert.throws(() => kubeadmRejoin({ ...input("/"), token: new Sensitive("Not-A-Token-Secret") }), (e: Error) => /token \(value hidden\) is not a kubeadm bootstrap token/.test(e.message) && !e.message.includes("Not-A-Token-Secret"));
      assert.throws(() => kubeadmRejoin({ ...input("/"), caCertHash: "md5:1" }), /caCertHash "md5:1" is not sha256:<64 hex digits>/);
      assert.throws(() => kubeadmRejoin({ ...input("/"), endpoint: "https://10.0.0.10:6443" }), /endpoint "https:\/\/10\.0\.0\.10:6443" is not host:port/);
    });
  });

  describe("setKubeletClusterDns", () => {
    // The shape kubeadm writes (sigs.k8s.io/yaml: sorted keys, non-indented lists), plus an operator's comment.
    const config = [
      "apiVersion: kubelet.config.k8s.io/v1beta1",
      "authentication:",
      "  anonymous:",
      "    enabled: false",
      "cgroupDriver: systemd",
      "clusterDNS:",
      "- 10.96.0.10 # kube-dns",
      "clusterDomain: cluster.local",
      "kind: KubeletConfiguration",
      'staticPodPath: "/etc/kubernetes/manifests"',
      "",
    ].join("\n");

    it("edits only the clusterDNS item, keeping its comment, and is idempotent", () => {
      const edit = editKubeletClusterDns(config, ["10.112.0.10"]);
      assert.equal(edit.text, config.replace("- 10.96.0.10 # kube-dns", "- 10.112.0.10 # kube-dns"));
      assert.deepEqual(edit.before, ["10.96.0.10"]);
      assert.equal(editKubeletClusterDns(edit.text, ["10.112.0.10"]).changed, false);
    });

    it("grows and shrinks the list in its own style, flow lists included", () => {
      const two = editKubeletClusterDns(config, ["10.112.0.10", "fd00::a"]).text;
      assert.equal(two, config.replace("- 10.96.0.10 # kube-dns\n", "- 10.112.0.10 # kube-dns\n- fd00::a\n"));
      assert.equal(editKubeletClusterDns(two, ["10.96.0.10"]).text, config);
      const flow = "kind: KubeletConfiguration\nclusterDNS: [10.96.0.10]\n";
      assert.equal(editKubeletClusterDns(flow, ["10.112.0.10", "10.112.0.11"]).text, "kind: KubeletConfiguration\nclusterDNS: [10.112.0.10, 10.112.0.11]\n");
    });

    it("refuses what it must not guess", () => {
      assert.throws(() => editKubeletClusterDns("kind: Pod\n", ["10.112.0.10"]), /not a KubeletConfiguration \(kind: Pod\)/);
      assert.throws(() => editKubeletClusterDns("kind: KubeletConfiguration\n", ["10.112.0.10"]), /no clusterDNS list; this kubelet runs without cluster DNS/);
      assert.throws(() => editKubeletClusterDns(config, ["kube-dns"]), /clusterDns\[0\] "kube-dns" is not an IP address/);
    });

    it("reads the file, writes it with the checked write, then is a no-op; refuses a file changed meanwhile", () => {
      const node = new FakeNode();
      node.write("/var/lib/kubelet/config.yaml", config);
      const read = node.runOk(track("readFile", readFile({ path: "/var/lib/kubelet/config.yaml", root: node.root })));
      const current = Buffer.from(read.stdout.trim(), "base64").toString("utf8");
      assert.equal(current, config);
      const { script, changed, newContent } = setKubeletClusterDns({ currentContent: current, clusterDns: ["10.112.0.10"], backupDir: BACKUP_DIR, root: node.root });
      assert.ok(changed);
      node.runTwice(track("setKubeletClusterDns", script));
      assert.equal(node.read("/var/lib/kubelet/config.yaml"), newContent);
      assert.equal(node.read(`${BACKUP_DIR}/var/lib/kubelet/config.yaml`), config);

      const other = new FakeNode();
      other.write("/var/lib/kubelet/config.yaml", config.replace("cgroupDriver: systemd", "cgroupDriver: cgroupfs"));
      const refused = other.run(script.replace(node.root, other.root));
      assert.equal(refused.status, 1);
      assert.match(refused.stderr, /changed since the edit was planned/);
    });
  });

  describe("readFile", () => {
    it("prints exact bytes as base64 (CRLF, no final newline) and fails on a missing file", () => {
      const node = new FakeNode();
      const crlf = fs.readFileSync(path.join(FIXTURES, "v1.24-minikube-kube-apiserver-mirror-pod-double-quoted-args.yaml"));
      const noNewline = fs.readFileSync(path.join(FIXTURES, "v1.19-kube-apiserver-oidc-no-trailing-newline.yaml"));
      node.write("/etc/kubernetes/manifests/a.yaml", crlf);
      node.write("/etc/kubernetes/manifests/b.yaml", noNewline);
      for (const [file, bytes] of [["a.yaml", crlf], ["b.yaml", noNewline]] as const) {
        const { stdout } = node.runOk(readFile({ path: `/etc/kubernetes/manifests/${file}`, root: node.root }));
        assert.ok(Buffer.from(stdout.trim(), "base64").equals(bytes), file);
      }
      const missing = node.run(readFile({ path: "/etc/kubernetes/manifests/none.yaml", root: node.root }));
      assert.equal(missing.status, 1);
      assert.match(missing.stderr, /none\.yaml does not exist/);
    });
  });

  describe("readFiles", () => {
    it("prints each file's exact bytes as base64 on a line of its own, '-' for a missing one", () => {
      const node = new FakeNode();
      const noNewline = fs.readFileSync(path.join(FIXTURES, "v1.19-kube-apiserver-oidc-no-trailing-newline.yaml"), "utf8");
      node.write("/etc/kubernetes/manifests/kube-apiserver.yaml", noNewline);
      node.write("/var/lib/kubelet/kubeadm-flags.env", 'KUBELET_KUBEADM_ARGS="--node-ip=192.168.1.5"\n');
      const paths = ["/etc/kubernetes/manifests/kube-apiserver.yaml", "/etc/kubernetes/super-admin.conf", "/var/lib/kubelet/kubeadm-flags.env"];
      const { stdout } = node.runTwice(track("readFiles", readFiles({ paths, root: node.root }))).first;
      const files = readNodeFiles(stdout, paths, { node: "cp-1", step: "read-files" });
      assert.deepEqual([...files], [[paths[0], noNewline], [paths[1], undefined], [paths[2], 'KUBELET_KUBEADM_ARGS="--node-ip=192.168.1.5"\n']]);
      assert.throws(() => readNodeFiles(stdout, [...paths, "/etc/kubernetes/admin.conf"], { node: "cp-1", step: "read-files" }), /node cp-1: the read-files step's output has no line for \/etc\/kubernetes\/admin\.conf/);
      assert.throws(() => readNodeFiles(stdout.replace(/ \S+\n/, " not-base64!\n"), paths, { node: "cp-1", step: "read-files" }), /reading \/etc\/kubernetes\/manifests\/kube-apiserver\.yaml returned no base64 content/);
      assert.throws(() => readFiles({ paths: ["/etc/a b"] }), /must not hold white space/);
    });
  });

  describe("writeFilesThenRestart (a control-plane node's kubeconfigs after its address moved)", () => {
    const KCM_CONF = "/etc/kubernetes/controller-manager.conf";
    const KCM_MANIFEST = "/etc/kubernetes/manifests/kube-controller-manager.yaml";
    const FLAGS = "/var/lib/kubelet/kubeadm-flags.env";
    const before: Record<string, string> = { [KCM_CONF]: "server: https://192.168.1.5:6443\n", [FLAGS]: 'KUBELET_KUBEADM_ARGS="--node-ip=192.168.1.5"\n' };
    const after: Record<string, string> = { [KCM_CONF]: "server: https://192.168.7.5:6443\n", [FLAGS]: 'KUBELET_KUBEADM_ARGS="--node-ip=192.168.7.5"\n' };
    const files = [KCM_CONF, FLAGS].map((p) => ({ path: p, current: before[p], next: after[p] }));
    const MARKED_KCM = markNodeAddress(KCM, KCM_MANIFEST, "192.168.7.5")!;
    const manifests = [{ component: "kube-controller-manager" as const, path: KCM_MANIFEST, current: KCM, next: MARKED_KCM }];
    const script = (node: FakeNode) => writeFilesThenRestart({ files, manifests, restartKubelet: true, backupDir: BACKUP_DIR, healthTimeoutSeconds: 2, root: node.root });
    const nodeWith = (content: Record<string, string>) => {
      const node = new FakeNode();
      for (const [p, text] of Object.entries(content)) node.write(p, text);
      node.write(KCM_MANIFEST, KCM, 0o600);
      node.write("/proc/31/cmdline", "kube-controller-manager\0--kubeconfig=/etc/kubernetes/controller-manager.conf\0");
      return node;
    };

    it("writes each file checked and backed up, then the marked manifest, waits for the component's health, restarts the kubelet; a re-run writes nothing", () => {
      const node = nodeWith(before);
      fs.writeFileSync(path.join(node.state, "health"), "ok");
      const { first, second } = node.runTwice(track("writeFilesThenRestart", script(node)));
      for (const p of [KCM_CONF, FLAGS]) {
        assert.equal(node.read(p), after[p]);
        assert.equal(node.read(`${BACKUP_DIR}${p}`), before[p], `${p} backed up`);
      }
      assert.equal(node.read(KCM_MANIFEST), MARKED_KCM, "the manifest carries the new address: a new pod for the kubelet");
      assert.equal(node.read(`${BACKUP_DIR}${KCM_MANIFEST}`), KCM, "the manifest backed up");
      assert.match(first.stdout, /wrote .*kube-controller-manager\.yaml[^\n]*\n.*kube-controller-manager restarted as a new pod \(pid stand-in\) and is healthy/);
      assert.match(second.stdout, /kube-controller-manager\.yaml already has the new content; nothing to do/);
      assert.deepEqual(node.calls().filter((c) => c.startsWith("systemctl")), ["systemctl restart kubelet", "systemctl is-active --quiet kubelet", "systemctl restart kubelet", "systemctl is-active --quiet kubelet"]);
      assert.ok(node.calls().some((c) => c.endsWith("https://127.0.0.1:10257/healthz")));
    });

    it("refuses a file changed since it was read, before any restart, and fails when the component stays unhealthy", () => {
      const changed = nodeWith({ ...before, [KCM_CONF]: "server: https://10.9.9.9:6443\n" });
      fs.writeFileSync(path.join(changed.state, "health"), "ok");
      const refused = changed.run(script(changed));
      assert.equal(refused.status, 1);
      assert.match(refused.stderr, /controller-manager\.conf changed since the edit was planned/);
      assert.equal(changed.read(KCM_CONF), "server: https://10.9.9.9:6443\n");
      assert.equal(changed.read(KCM_MANIFEST), KCM, "the manifest is not touched");
      assert.deepEqual(changed.calls(), [], "nothing restarted");

      const unhealthy = nodeWith(before);
      const failed = unhealthy.run(script(unhealthy));
      assert.equal(failed.status, 1);
      assert.match(failed.stderr, /kube-controller-manager did not come back healthy within 2s of its manifest edit \(health answer 'curl: \(7\) Failed to connect'\)/);
      assert.ok(!unhealthy.calls().some((c) => c.startsWith("systemctl")), "the kubelet is not restarted after a failure");
    });

    it("refuses a manifest changed since it was read, naming it", () => {
      const node = nodeWith(before);
      node.write(KCM_MANIFEST, `${KCM}# edited by hand\n`, 0o600);
      fs.writeFileSync(path.join(node.state, "health"), "ok");
      const refused = node.run(script(node));
      assert.equal(refused.status, 1);
      assert.match(refused.stderr, /kube-controller-manager\.yaml changed since the edit was planned/);
      assert.ok(!node.calls().some((c) => c.startsWith("systemctl")));
    });
  });

  describe("shellcheck", () => {
    it("finds every generated script clean (also as generated for the real root)", () => {
      const forRealRoot = [
        ["backupControlPlane", backupControlPlane({ backupDir: BACKUP_DIR })],
        ["writeManifest", writeManifest({ path: "/etc/kubernetes/manifests/kube-apiserver.yaml", expectedSha256: sha256HexOf(APISERVER), newContentBase64: Buffer.from(APISERVER).toString("base64"), backupDir: BACKUP_DIR })],
        ["restoreManifest", restoreManifest({ backupDir: BACKUP_DIR, path: "/etc/kubernetes/manifests/kube-apiserver.yaml" })],
        ["waitComponentHealthy", waitComponentHealthy({ component: "kube-controller-manager", url: "https://127.0.0.1:10257/healthz", expectFlags: ["--cluster-cidr=10.48.0.0/16"], timeoutSeconds: 300 })],
        ["cleanupCni", cleanupCni({ cni: "flannel", oldPodCidrs: ["10.244.0.0/16"], backupDir: BACKUP_DIR })],
        ["kubeletReregister-stop", kubeletReregister({ backupDir: BACKUP_DIR }).stop],
        ["kubeletReregister-start", kubeletReregister({ backupDir: BACKUP_DIR }).start],
        ["kubeadmRejoin", kubeadmRejoin({ endpoint: "cp.example:6443", token: new Sensitive("abcdef.0123456789abcdef"), caCertHash: `sha256:${"0".repeat(64)}`, rejoinId: "m1", backupDir: BACKUP_DIR, criSocket: "unix:///run/containerd/containerd.sock" }).reveal("script")],
        ["readFile", readFile({ path: "/var/lib/kubelet/config.yaml" })],
        ["readFiles", readFiles({ paths: ["/etc/kubernetes/admin.conf", "/var/lib/kubelet/kubeadm-flags.env"] })],
        ["writeFilesThenRestart", writeFilesThenRestart({ files: [{ path: "/etc/kubernetes/scheduler.conf", current: "a", next: "b" }], manifests: [{ component: "kube-scheduler", path: "/etc/kubernetes/manifests/kube-scheduler.yaml", current: "a", next: "b" }, { component: "kube-controller-manager", path: "/etc/kubernetes/manifests/kube-controller-manager.yaml", current: "c", next: "d" }], restartKubelet: true, backupDir: BACKUP_DIR })],
      ] as const;
      const all = [...generated, ...forRealRoot.map(([name, script]) => ({ name, script }))];
      const names = new Set(all.map((s) => s.name.split("-")[0]));
      for (const step of ["backupControlPlane", "writeManifest", "restoreManifest", "waitComponentHealthy", "cleanupCni", "kubeletReregister", "kubeadmRejoin", "setKubeletClusterDns", "readFile", "readFiles", "writeFilesThenRestart"]) {
        assert.ok(names.has(step), `${step} was generated and is checked`);
      }
      const dir = tempDir("shellcheck");
      for (const [i, { name, script }] of all.entries()) {
        const file = path.join(dir, `${i}-${name}.sh`);
        fs.writeFileSync(file, script);
        const result = spawnSync("shellcheck", ["--severity=style", "--shell=bash", file], { encoding: "utf8" });
        assert.equal(result.status, 0, `${name}:\n${result.stdout}${result.stderr}`);
      }
    });
  });
});
