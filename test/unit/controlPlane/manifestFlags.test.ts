import { strict as assert } from "assert";
import * as fs from "fs";
import * as path from "path";
import { parse as yamlParse } from "yaml";
import { ManifestFlagError, readFlag, readFlags, setFlags } from "../../../lib/controlPlane/manifestFlags";

const FIXTURES = path.join(__dirname, "..", "..", "fixtures", "manifests");

type Role = "kube-apiserver" | "kube-controller-manager" | "etcd";

/** The edits the migration makes per component; etcd is never migrated, but its files exercise 4-space layout. */
const EDITS: Record<Role, Record<string, string>> = {
  "kube-apiserver": { "service-cluster-ip-range": "10.112.0.0/12" },
  "kube-controller-manager": {
    "cluster-cidr": "10.48.0.0/16",
    "service-cluster-ip-range": "10.112.0.0/12",
    "node-cidr-mask-size": "24",
    "allocate-node-cidrs": "false",
  },
  etcd: { "snapshot-count": "20000", "quota-backend-bytes": "4294967296" },
};

function roleOf(text: string): Role {
  const doc = yamlParse(text);
  const name: string = doc.spec.containers[0].name;
  assert.ok(name in EDITS, `unexpected container ${name}`);
  return name as Role;
}

/** Line diff by longest common subsequence: the lines only in `a` and the lines only in `b`. */
function lineDiff(a: string[], b: string[]): { removed: string[]; added: string[] } {
  const lcs: number[][] = Array.from({ length: a.length + 1 }, () => new Array(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const removed: string[] = [];
  const added: string[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      i++;
      j++;
    } else if (lcs[i + 1][j] >= lcs[i][j + 1]) removed.push(a[i++]);
    else added.push(b[j++]);
  }
  removed.push(...a.slice(i));
  added.push(...b.slice(j));
  return { removed, added };
}

/** The parsed document with the edited flags taken out of the container's argv, to compare everything else. */
function withoutFlags(text: string, flags: string[]): unknown {
  const doc = yamlParse(text);
  const container = doc.spec.containers[0];
  const isEdited = (item: string) => flags.some((f) => item === `--${f}` || item.startsWith(`--${f}=`));
  for (const list of ["command", "args"]) if (container[list]) container[list] = container[list].filter((item: string) => !isEdited(item));
  return doc;
}

function argv(text: string): string[] {
  const container = yamlParse(text).spec.containers[0];
  return [...(container.command ?? []).slice(1), ...(container.args ?? [])];
}

const files = fs.readdirSync(FIXTURES).filter((f) => f.endsWith(".yaml")).sort();

describe("manifestFlags on real kubeadm manifests", () => {
  it("has the real-world fixtures to test on", () => {
    assert.equal(files.length, 11);
  });

  for (const file of files) {
    describe(file, () => {
      const original = fs.readFileSync(path.join(FIXTURES, file), "utf8");
      const role = roleOf(original);
      const edits = EDITS[role];
      const before = readFlags(original);
      const result = setFlags(original, edits, { source: file });

      it("reads back the new values, each exactly once (a)", () => {
        const after = readFlags(result.text);
        for (const [flag, value] of Object.entries(edits)) assert.deepEqual(after.get(flag), [value], flag);
        for (const [flag, values] of before) if (!(flag in edits)) assert.deepEqual(after.get(flag), values, flag);
        assert.equal(after.size, new Set([...before.keys(), ...Object.keys(edits)]).size);
        // The plain YAML reading agrees: the argv the kubelet would start carries each new flag once.
        for (const [flag, value] of Object.entries(edits)) {
          assert.deepEqual(argv(result.text).filter((a) => a.startsWith(`--${flag}=`)), [`--${flag}=${value}`]);
        }
      });

      it("reports one change per flag, matching what was in the file", () => {
        assert.deepEqual(result.changes.map((c) => c.flag), Object.keys(edits));
        for (const change of result.changes) {
          const had = before.get(change.flag);
          assert.equal(change.before, had?.[had.length - 1]);
          assert.equal(change.action, had === undefined ? "added" : had[had.length - 1] === change.after ? "unchanged" : "updated");
        }
      });

      it("changes only the edited flag lines and adds only the missing ones (b)", () => {
        const { removed, added } = lineDiff(original.split("\n"), result.text.split("\n"));
        const updated = result.changes.filter((c) => c.action === "updated").length;
        const appended = result.changes.filter((c) => c.action === "added").length;
        assert.equal(removed.length, updated, `removed lines: ${JSON.stringify(removed)}`);
        assert.equal(added.length, updated + appended, `added lines: ${JSON.stringify(added)}`);
        const flagLine = (line: string, flag: string) => new RegExp(`^\\s*- ['"]?--${flag}=`).test(line);
        for (const line of removed) assert.ok(result.changes.some((c) => c.action === "updated" && flagLine(line, c.flag)), line);
        for (const line of added) assert.ok(result.changes.some((c) => c.action !== "unchanged" && flagLine(line, c.flag)), line);
      });

      it("writes new lines in the file's own style: indentation, quotes, line breaks", () => {
        const lines = result.text.split("\n");
        const oldLines = original.split("\n");
        const sampleFlag = oldLines.find((l) => /^\s*- ['"]?--/.test(l));
        assert.ok(sampleFlag);
        const prefix = sampleFlag.slice(0, sampleFlag.indexOf("--"));
        for (const change of result.changes.filter((c) => c.action !== "unchanged")) {
          const line = lines.find((l) => l.includes(`--${change.flag}=${change.after}`));
          assert.ok(line, change.flag);
          assert.equal(line.slice(0, line.indexOf("--")), prefix, `indentation and quote of ${change.flag}`);
          assert.equal(line.endsWith("\r"), sampleFlag.endsWith("\r"), `line break of ${change.flag}`);
        }
        assert.equal(result.text.endsWith("\n"), original.endsWith("\n"), "final line break kept as it was");
      });

      it("appends a missing flag (--v, in no fixture) in the file's style, after the last flag", () => {
        assert.equal(before.get("v"), undefined);
        const { text, changes } = setFlags(original, { v: "2" });
        assert.equal(changes[0].action, "added");
        const lines = text.split("\n");
        const oldLines = original.split("\n");
        const lastFlag = Math.max(...oldLines.map((l, i) => (/^\s*- ['"]?--/.test(l) ? i : -1)));
        const prefix = oldLines[lastFlag].slice(0, oldLines[lastFlag].indexOf("--"));
        const quote = prefix.endsWith("'") || prefix.endsWith('"') ? prefix.slice(-1) : "";
        const eol = oldLines[lastFlag].endsWith("\r") ? "\r" : "";
        assert.deepEqual(lines, [...oldLines.slice(0, lastFlag + 1), `${prefix}--v=2${quote}${eol}`, ...oldLines.slice(lastFlag + 1)]);
      });

      it("is idempotent: editing twice equals editing once (c)", () => {
        const again = setFlags(result.text, edits);
        assert.equal(again.text, result.text);
        assert.ok(again.changes.every((c) => c.action === "unchanged"));
      });

      it("parses to the same document except the flag values (d)", () => {
        assert.deepEqual(withoutFlags(result.text, Object.keys(edits)), withoutFlags(original, Object.keys(edits)));
        // And the edit really did something to the parsed document.
        assert.notDeepEqual(yamlParse(result.text), yamlParse(original));
      });
    });
  }

  it("reads a double-quoted item holding a space as one value, as the component sees it", () => {
    const text = fs.readFileSync(path.join(FIXTURES, "v1.24-minikube-kube-apiserver-mirror-pod-double-quoted-args.yaml"), "utf8");
    assert.equal(readFlag(text, "tls-private-key-file"), "/var/lib/minikube/certs/apiserver.key --token-auth-file=<file>");
    assert.equal(readFlag(text, "--service-cluster-ip-range"), "10.96.0.0/12");
  });

  it("reads flags from args when command only names the binary", () => {
    const text = fs.readFileSync(path.join(FIXTURES, "v1.24-kube-apiserver-mirror-pod-command-plus-args.yaml"), "utf8");
    assert.equal(readFlag(text, "secure-port"), "8443");
    assert.equal(setFlags(text, { "service-cluster-ip-range": "10.112.0.0/12" }).changes[0].list, "args");
  });

  it("reads an empty-valued flag as the empty string", () => {
    const text = fs.readFileSync(path.join(FIXTURES, "v1.19-kube-apiserver-oidc-no-trailing-newline.yaml"), "utf8");
    assert.deepEqual(readFlags(text).get("runtime-config"), [""]);
  });
});

const pod = (containerBody: string) => `apiVersion: v1
kind: Pod
metadata:
  name: kube-controller-manager
spec:
  containers:
  - name: kube-controller-manager
${containerBody}`;

describe("manifestFlags edge cases", () => {
  it("collapses a repeated flag to one effective value, where the effective one was", () => {
    const text = pod(`    command:
    - kube-controller-manager
    - --cluster-cidr=10.244.0.0/16
    - --leader-elect=true
    - --cluster-cidr=10.245.0.0/16
`);
    assert.deepEqual(readFlags(text).get("cluster-cidr"), ["10.244.0.0/16", "10.245.0.0/16"]);
    const { text: out, changes } = setFlags(text, { "cluster-cidr": "10.48.0.0/16" });
    assert.deepEqual(changes, [{ flag: "cluster-cidr", action: "updated", before: "10.245.0.0/16", after: "10.48.0.0/16", list: "command", removedDuplicates: 1 }]);
    assert.equal(out, pod(`    command:
    - kube-controller-manager
    - --leader-elect=true
    - --cluster-cidr=10.48.0.0/16
`));
    assert.equal(setFlags(out, { "cluster-cidr": "10.48.0.0/16" }).text, out);
  });

  it("null removes a flag, every occurrence of it, and the per-family masks take its place (single → dual-stack KCM)", () => {
    const text = pod(`    command:
    - kube-controller-manager
    - --node-cidr-mask-size=24
    - --cluster-cidr=10.244.0.0/16
    - --node-cidr-mask-size
    - "23"
`);
    const { text: out, changes } = setFlags(text, {
      "cluster-cidr": "10.244.0.0/16,fd00:10:244::/56",
      "node-cidr-mask-size": null,
      "node-cidr-mask-size-ipv4": 24,
      "node-cidr-mask-size-ipv6": 64,
    });
    assert.deepEqual(changes.map((c) => [c.flag, c.action, c.before, c.after]), [
      ["cluster-cidr", "updated", "10.244.0.0/16", "10.244.0.0/16,fd00:10:244::/56"],
      ["node-cidr-mask-size", "removed", "23", undefined],
      ["node-cidr-mask-size-ipv4", "added", undefined, "24"],
      ["node-cidr-mask-size-ipv6", "added", undefined, "64"],
    ]);
    assert.equal(out, pod(`    command:
    - kube-controller-manager
    - --cluster-cidr=10.244.0.0/16,fd00:10:244::/56
    - --node-cidr-mask-size-ipv4=24
    - --node-cidr-mask-size-ipv6=64
`));
    // a second edit changes nothing, and removing an absent flag is no change
    const again = setFlags(out, { "node-cidr-mask-size": null, "node-cidr-mask-size-ipv4": 24 });
    assert.equal(again.text, out);
    assert.deepEqual(again.changes.map((c) => c.action), ["unchanged", "unchanged"]);
  });

  it("collapses duplicates even when the effective value is already right", () => {
    const text = pod(`    command:
    - kube-controller-manager
    - --cluster-cidr=10.244.0.0/16
    - --cluster-cidr=10.48.0.0/16
`);
    const { text: out, changes } = setFlags(text, { "cluster-cidr": "10.48.0.0/16" });
    assert.equal(changes[0].action, "updated");
    assert.deepEqual(readFlags(out).get("cluster-cidr"), ["10.48.0.0/16"]);
  });

  it("treats command then args as one argv: a flag in args overrides command, and the command copy goes", () => {
    const text = pod(`    command:
    - kube-controller-manager
    - --cluster-cidr=10.1.0.0/16
    args:
    - --cluster-cidr=10.2.0.0/16
`);
    assert.equal(readFlag(text, "cluster-cidr"), "10.2.0.0/16");
    const { text: out, changes } = setFlags(text, { "cluster-cidr": "10.48.0.0/16" });
    assert.equal(changes[0].list, "args");
    assert.equal(out, pod(`    command:
    - kube-controller-manager
    args:
    - --cluster-cidr=10.48.0.0/16
`));
  });

  it("edits a space-separated flag in its own form and keeps a numeric-looking value a string", () => {
    const text = pod(`    command:
    - kube-controller-manager
    - --node-cidr-mask-size
    - "16"
    - --cluster-cidr
    - 10.244.0.0/16
    - --v=2
`);
    assert.equal(readFlag(text, "node-cidr-mask-size"), "16");
    const { text: out } = setFlags(text, { "node-cidr-mask-size": 24, "cluster-cidr": "10.48.0.0/16" });
    assert.equal(out, text.replace('"16"', '"24"').replace("- 10.244.0.0/16", "- 10.48.0.0/16"));
    assert.equal(yamlParse(out).spec.containers[0].command[2], "24");
  });

  it("quotes a new plain value that YAML would read as a number", () => {
    const text = pod(`    command:
    - kube-controller-manager
    - --mask
    - "16"
`);
    const plainValue = pod(`    command:
    - kube-controller-manager
    - --mask
    - sixteen
`);
    const out = setFlags(plainValue, { mask: "24" }).text;
    assert.equal(out, text.replace('"16"', '"24"'));
  });

  it("rewrites a bare boolean flag as --flag=value, and leaves it alone when already true", () => {
    const text = pod(`    command:
    - kube-controller-manager
    - --allocate-node-cidrs
    - --v=2
`);
    assert.equal(readFlag(text, "allocate-node-cidrs"), "true");
    assert.equal(setFlags(text, { "allocate-node-cidrs": true }).text, text);
    const out = setFlags(text, { "allocate-node-cidrs": false }).text;
    assert.equal(out, text.replace("- --allocate-node-cidrs\n", "- --allocate-node-cidrs=false\n"));
  });

  it("edits and appends inside a flow-style list without touching its layout", () => {
    const text = pod(`    command: [kube-controller-manager, '--cluster-cidr=10.244.0.0/16', --v=2]  # flow
    image: registry.k8s.io/kube-controller-manager:v1.29.0
`);
    const { text: out } = setFlags(text, { "cluster-cidr": "10.48.0.0/16", "node-cidr-mask-size": "24" });
    assert.equal(out, pod(`    command: [kube-controller-manager, '--cluster-cidr=10.48.0.0/16', --v=2, --node-cidr-mask-size=24]  # flow
    image: registry.k8s.io/kube-controller-manager:v1.29.0
`));
  });

  it("keeps comments: inline, between items, and above a removed duplicate", () => {
    const text = pod(`    command:
    - kube-controller-manager   # the binary
    # pod range, set by the operator
    - --cluster-cidr=10.244.0.0/16
    - --v=2 # verbose
    # final value
    - --cluster-cidr=10.245.0.0/16
`);
    const out = setFlags(text, { "cluster-cidr": "10.48.0.0/16" }).text;
    assert.equal(out, pod(`    command:
    - kube-controller-manager   # the binary
    # pod range, set by the operator
    - --v=2 # verbose
    # final value
    - --cluster-cidr=10.48.0.0/16
`));
  });

  it("appends to command when the container has no args, even with a single item", () => {
    const text = pod(`    command:
    - kube-controller-manager
    image: x
`);
    assert.equal(setFlags(text, { "cluster-cidr": "10.48.0.0/16" }).text, pod(`    command:
    - kube-controller-manager
    - --cluster-cidr=10.48.0.0/16
    image: x
`));
  });

  it("replaces a space-separated value with a dash-leading one as a joined flag", () => {
    const text = pod(`    command:
    - kube-controller-manager
    - --offset
    - "5"
`);
    const out = setFlags(text, { offset: "-1" }).text;
    assert.equal(out, pod(`    command:
    - kube-controller-manager
    - --offset=-1
`));
    assert.equal(readFlag(out, "offset"), "-1");
  });

  it("picks a named container among several", () => {
    const text = pod(`    command: [kube-controller-manager, --a=1]
  - name: sidecar
    command: [sidecar, --a=2]
`);
    assert.equal(readFlag(text, "a", { container: "sidecar" }), "2");
    const out = setFlags(text, { a: "3" }, { container: "sidecar" }).text;
    assert.equal(readFlag(out, "a", { container: "sidecar" }), "3");
    assert.equal(readFlag(out, "a", { container: "kube-controller-manager" }), "1");
  });

  describe("errors are one clear line", () => {
    const cases: Array<[string, () => unknown, RegExp]> = [
      ["no such container", () => setFlags(pod("    command: [x]\n"), { a: "1" }, { container: "kube-apiserver", source: "kcm.yaml" }),
        /^kcm\.yaml: no container "kube-apiserver" \(containers: kube-controller-manager\); pass one of those$/],
      ["not a Pod", () => readFlags("apiVersion: apps/v1\nkind: Deployment\nspec: {}\n"), /^manifest: kind is "Deployment", not a Pod; pass a static-pod manifest/],
      ["no kind", () => readFlags("spec: {}\n"), /^manifest: kind is missing, not a Pod/],
      ["several containers, none named", () => readFlags(pod("    command: [a]\n  - name: b\n    command: [b]\n")),
        /^manifest: the Pod has 2 containers \(kube-controller-manager, b\); pass container$/],
      ["invalid YAML", () => readFlags("kind: Pod\nspec: [\n"), /^manifest: not valid YAML \(\w+ at line \d+\); fix the file first$/],
      ["two documents", () => readFlags("kind: Pod\n---\nkind: Pod\n"), /^manifest: expected exactly one YAML document, found 2/],
      ["shell wrapper", () => setFlags(pod("    command: [/bin/sh, -c, 'kube-controller-manager --a=1']\n"), { a: "2" }),
        /^manifest: container "kube-controller-manager" starts its component through "\/bin\/sh"/],
      ["bad flag name", () => setFlags(pod("    command: [x]\n"), { "Cluster CIDR": "1" }), /^manifest: "Cluster CIDR" is not a flag name/],
      ["nowhere to add", () => setFlags(pod("    image: x\n"), { a: "1" }), /^manifest: container "kube-controller-manager" has neither command nor args to add --a to/],
      ["non-string item", () => readFlags(pod("    command: [x, {a: 1}]\n")), /^manifest: command\[1\] of container "kube-controller-manager" is not a string/],
    ];
    for (const [name, run, message] of cases) {
      it(name, () => {
        assert.throws(run, (error: unknown) => {
          assert.ok(error instanceof ManifestFlagError, String(error));
          assert.ok(!error.message.includes("\n"), error.message);
          assert.match(error.message, message);
          return true;
        });
      });
    }
  });
});
