// A control-plane node's certificates re-issued for its new address (issue 16), by this test-bed version's real
// kubeadm on a PKI the same kubeadm made for the old address, checked with openssl: first with the old address kept
// beside the new one (while the node still answers there), then without it; every other SAN kept, each certificate
// verified against its CA; a re-run changes nothing; a kubeadm failure part-way puts every replaced pair back.
import { strict as assert } from "assert";
import { createHash } from "crypto";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { reissueNodeAddressCerts, ReissueNodeAddressCertsInput } from "../../lib/remote/scripts/reissueNodeAddressCerts";
import { tempDir } from "../support/tempDirs";
import { kubeadmControlPlane } from "../testbed/kubeadmControlPlane";
import { requireKubeBinary } from "../testbed/kubeBinaries";

const FROM = "192.168.1.105";
const TO = "192.168.7.105";
const PAIRS = ["apiserver", "etcd/server", "etcd/peer"];
const CA: Record<string, string> = { apiserver: "ca", "etcd/server": "etcd/ca", "etcd/peer": "etcd/ca" };
const BACKUP = "/var/lib/cidr-migration/backup/run-1";

const openssl = (...args: string[]) => {
  const r = spawnSync("openssl", args, { encoding: "utf8" });
  assert.equal(r.status, 0, `openssl ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
};
/** The SANs as openssl prints them, one string each. */
const sansOf = (file: string) => openssl("x509", "-noout", "-ext", "subjectAltName", "-in", file).split("\n").slice(1).join(",").split(",").map((s) => s.trim()).filter(Boolean).sort();
const sha = (file: string) => createHash("sha256").update(fs.readFileSync(file)).digest("hex");

describe("node address change: certificates re-issued by real kubeadm, checked with openssl (issue 16)", function () {
  this.timeout(120_000);
  let root: string;
  let clusterConfiguration: string;
  const pki = (...parts: string[]) => path.join(root, "etc/kubernetes/pki", ...parts);
  const script = (keepOld: boolean, kubeadm = requireKubeBinary("kubeadm")) => {
    const input: ReissueNodeAddressCertsInput = { certConfig: { clusterConfiguration, serviceSubnet: "10.96.0.0/12", nodeName: "cp-1" }, from: FROM, to: TO, keepOld, backupDir: BACKUP, kubeadm, root };
    return reissueNodeAddressCerts(input);
  };
  const run = (text: string) => spawnSync("bash", ["-c", text], { encoding: "utf8" });
  const state = () => Object.fromEntries(PAIRS.flatMap((p) => [[`${p}.crt`, sha(pki(`${p}.crt`))], [`${p}.key`, sha(pki(`${p}.key`))]]));

  let original: Record<string, string[]>;
  let originalFiles: Record<string, string>;

  before(() => {
    root = tempDir("node-address-certs");
    clusterConfiguration = kubeadmControlPlane(root, { nodeName: "cp-1", advertiseAddress: FROM, serviceSubnet: "10.96.0.0/12", podSubnet: "10.244.0.0/16" }).clusterConfiguration;
    original = Object.fromEntries(PAIRS.map((p) => [p, sansOf(pki(`${p}.crt`))]));
    originalFiles = state();
    for (const p of PAIRS) assert.ok(original[p].includes(`IP Address:${FROM}`), `kubeadm gave ${p} the old address`);
  });

  it("shellchecks clean", () => {
    const file = path.join(tempDir("reissue-sh"), "reissue.sh");
    fs.writeFileSync(file, script(true));
    const r = spawnSync("shellcheck", ["--severity=style", "--shell=bash", file], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stdout + r.stderr);
  });

  it("keeping the old address: each certificate holds both, every other SAN kept, verified against its CA and matching its key; a re-run changes nothing", () => {
    const first = run(script(true));
    assert.equal(first.status, 0, first.stderr);
    for (const p of PAIRS) {
      const now = sansOf(pki(`${p}.crt`));
      assert.deepEqual(now, [...original[p], `IP Address:${TO}`].sort(), p);
      assert.match(openssl("verify", "-CAfile", pki(`${CA[p]}.crt`), pki(`${p}.crt`)), /: OK/);
      assert.equal(openssl("x509", "-noout", "-pubkey", "-in", pki(`${p}.crt`)), openssl("pkey", "-pubout", "-in", pki(`${p}.key`)), `${p} matches its key`);
      assert.equal(sha(path.join(root, BACKUP, "node-address-certs/previous", `${p}.crt`)), originalFiles[`${p}.crt`], `${p}'s original is kept`);
    }
    const issued = state();
    const again = run(script(true));
    assert.equal(again.status, 0, again.stderr);
    assert.match(again.stderr + again.stdout, /already has the SANs asked for/);
    assert.deepEqual(state(), issued, "a re-run changes nothing");
  });

  it("a kubeadm failure part-way (etcd-peer) puts every pair this run replaced back; the run after it succeeds without the old address", () => {
    const before = state();
    const standIn = path.join(tempDir("kubeadm-fails-peer"), "kubeadm");
    fs.writeFileSync(standIn, `#!/bin/bash\nif [ "$4" = etcd-peer ]; then echo "stand-in: etcd-peer fails" >&2; exit 1; fi\nexec ${requireKubeBinary("kubeadm")} "$@"\n`, { mode: 0o755 });
    const failed = run(script(false, standIn));
    assert.equal(failed.status, 1, failed.stdout);
    assert.match(failed.stderr + failed.stdout, /kubeadm init phase certs etcd-peer failed; every certificate this run replaced is back as it was/);
    assert.deepEqual(state(), before, "apiserver and etcd/server are back as they were, with the old address");

    const done = run(script(false));
    assert.equal(done.status, 0, done.stderr);
    for (const p of PAIRS) {
      assert.deepEqual(sansOf(pki(`${p}.crt`)), [...original[p].filter((s) => s !== `IP Address:${FROM}`), `IP Address:${TO}`].sort(), `${p}: the old address dropped, the new one there, nothing else changed`);
      assert.match(openssl("verify", "-CAfile", pki(`${CA[p]}.crt`), pki(`${p}.crt`)), /: OK/);
      assert.equal(sha(path.join(root, BACKUP, "node-address-certs/previous", `${p}.crt`)), originalFiles[`${p}.crt`], `${p}: the first backup is still the certificate from before the move`);
    }
  });
});
