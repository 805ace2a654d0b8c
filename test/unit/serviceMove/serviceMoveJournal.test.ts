// The journal format, dependents bookkeeping, the crash hook, IP ranges and the Plan → moves mapping: the pure
// parts of the Service mover.
import { strict as assert } from "assert";
import { spawnSync } from "child_process";
import * as path from "path";
import {
  hasSelector, isRederivedByController, relinkedOwners, restorableCopy, sameEndpoints, sameOwners, withoutOwners,
} from "../../../lib/serviceMove/dependents";
import { collectionPath } from "../../../lib/serviceMove/dependentsScan";
import { FAULT_ENV, FAULT_POINTS } from "../../../lib/serviceMove/faultHook";
import {
  entriesFromSecret, entryDataKey, JOURNAL_FORMAT, JOURNAL_LABEL, JournalEntry, journalName, packJournal, withEntries,
} from "../../../lib/serviceMove/journal";
import { KubeObject, OwnerReference } from "../../../lib/serviceMove/kubeRest";
import { serviceMovesFromPlan, standInName } from "../../../lib/serviceMove/planMoves";
import { Plan, ServiceMove } from "../../../lib/plan/planModel";

const REPO = path.resolve(__dirname, "..", "..", "..");

function entry(overrides: Partial<JournalEntry> = {}): JournalEntry {
  return {
    format: JOURNAL_FORMAT, kind: "recreate", namespace: "shop", name: "cart", fromIP: "10.96.7.7", toIP: "10.100.7.7",
    recordedAt: "2024-05-01T10:00:00.000Z",
    service: { apiVersion: "v1", kind: "Service", metadata: { name: "cart", namespace: "shop", uid: "u-1", annotations: { note: "ü ✓ 10.96.7.7" } }, spec: { clusterIP: "10.96.7.7" } },
    dependents: [],
    ...overrides,
  };
}

describe("serviceMove: journal format", () => {
  it("round-trips entries through packed Secrets, unicode included", () => {
    const original = entry({ endpoints: { kind: "Endpoints", metadata: { name: "cart", uid: "e-1" }, subsets: [{ addresses: [{ ip: "192.168.0.1" }] }] } });
    const [secret, ...more] = packJournal([original, entry({ name: "till" })], "kube-system", "ab12cd34");
    assert.deepEqual(more, []);
    assert.equal(secret.kind, "Secret");
    assert.equal(secret.metadata?.name, "cidr-migration-journal-ab12cd34-0");
    assert.equal(secret.metadata?.namespace, "kube-system");
    assert.equal(secret.metadata?.labels?.[JOURNAL_LABEL], "service-move");
    assert.deepEqual(Object.keys(secret.data as object).sort(), [entryDataKey("shop", "cart"), entryDataKey("shop", "till")].sort());
    assert.deepEqual(entriesFromSecret(secret).sort((a, b) => a.name.localeCompare(b.name)), [original, entry({ name: "till" })]);
  });

  it("packs by size and count: 500 small entries take a handful of Secrets, one large entry gets its own", () => {
    const many = Array.from({ length: 500 }, (_, i) => entry({ name: `svc-${i}` }));
    const packed = packJournal(many, "kube-system", "t");
    assert.equal(packed.length, 5);
    assert.equal(packed.flatMap(entriesFromSecret).length, 500);
    const large = entry({ name: "big" });
    large.service.metadata!.annotations = { big: "x".repeat(400 * 1024) };
    const mixed = packJournal([large, entry({ name: "a" }), { ...large, name: "big2" }], "kube-system", "t");
    assert.deepEqual(mixed.map((s) => entriesFromSecret(s).map((e) => e.name)), [["big", "a"], ["big2"]]);
  });

  it("withEntries rewrites and removes single entries of a pack", () => {
    const [secret] = packJournal([entry(), entry({ name: "till" })], "kube-system", "t");
    const updated = withEntries(secret, [entry({ toIP: "10.100.9.9" })], [entryDataKey("shop", "till")]);
    assert.deepEqual(entriesFromSecret(updated).map((e) => [e.name, e.toIP]), [["cart", "10.100.9.9"]]);
    assert.deepEqual(Object.keys(withEntries(secret, [], [entryDataKey("shop", "cart"), entryDataKey("shop", "till")]).data as object), []);
  });

  it("data keys are stable, distinct per Service, valid even for the longest Service keys", () => {
    assert.equal(journalName("shop", "cart"), journalName("shop", "cart"));
    assert.notEqual(journalName("shop", "cart"), journalName("shop", "carts"));
    assert.notEqual(journalName("a-b", "c"), journalName("a", "b-c"));
    const long = entryDataKey("n".repeat(63), "s".repeat(63));
    assert.match(long, /^[-._a-zA-Z0-9]+$/);
    assert.ok(long.length <= 253);
  });

  it("refuses a Secret that is not a journal, or of another format version, with a line naming it", () => {
    assert.throws(() => entriesFromSecret({ metadata: { namespace: "kube-system", name: "x" }, data: {} }), /journal Secret kube-system\/x is labelled cidr-migration\.io\/journal=service-move but holds no journal entries/);
    assert.throws(() => entriesFromSecret({ metadata: { namespace: "kube-system", name: "x" }, data: { "a.json": Buffer.from("{").toString("base64") } }), /kube-system\/x: a\.json is not JSON/);
    const [other] = packJournal([{ ...entry(), format: "cidr-migration.io/service-move/v0" as typeof JOURNAL_FORMAT }], "kube-system", "t");
    assert.throws(() => entriesFromSecret(other), /has format "cidr-migration\.io\/service-move\/v0", this cidr-migration reads cidr-migration\.io\/service-move\/v1/);
  });

  it("refuses an entry too large for a Secret before anything is deleted", () => {
    const big = entry();
    big.service.metadata!.annotations = { huge: "x".repeat(1024 * 1024) };
    assert.throws(() => packJournal([big], "kube-system", "t"), /Service shop\/cart: its journal entry would be \d+ bytes, more than a Secret can hold; nothing was changed/);
  });
});

describe("serviceMove: dependents", () => {
  const svcRef: OwnerReference = { apiVersion: "v1", kind: "Service", name: "cart", uid: "old-svc" };
  const other: OwnerReference = { apiVersion: "apps/v1", kind: "Deployment", name: "d", uid: "dep-1", controller: true };

  it("a selector is only a selector when it selects something", () => {
    assert.equal(hasSelector({ spec: { selector: { app: "x" } } }), true);
    assert.equal(hasSelector({ spec: { selector: {} } }), false);
    assert.equal(hasSelector({ spec: {} }), false);
  });

  it("EndpointSlices of the two endpointslice controllers are re-derived; hand-made ones and other kinds are not", () => {
    const slice = (managedBy?: string): KubeObject => ({ kind: "EndpointSlice", metadata: { labels: managedBy ? { "endpointslice.kubernetes.io/managed-by": managedBy } : {} } });
    assert.equal(isRederivedByController(slice("endpointslice-controller.k8s.io")), true);
    assert.equal(isRederivedByController(slice("endpointslicemirroring-controller.k8s.io")), true);
    assert.equal(isRederivedByController(slice("my-operator")), false);
    assert.equal(isRederivedByController(slice()), false);
    assert.equal(isRederivedByController({ kind: "ConfigMap", metadata: { labels: { "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io" } } }), false);
  });

  it("detach removes only the moving owners; re-link maps old uids to new and keeps references added meanwhile", () => {
    assert.deepEqual(withoutOwners([svcRef, other], new Set(["old-svc"])), [other]);
    const added: OwnerReference = { apiVersion: "v1", kind: "ConfigMap", name: "c", uid: "cm-9" };
    const relinked = relinkedOwners([svcRef, other], [other, added], new Map([["old-svc", "new-svc"]]));
    assert.deepEqual(relinked, [{ ...svcRef, uid: "new-svc" }, other, added]);
    // a stale reference to the old uid still on the object is not kept
    assert.deepEqual(relinkedOwners([svcRef], [svcRef], new Map([["old-svc", "new-svc"]])), [{ ...svcRef, uid: "new-svc" }]);
    assert.equal(sameOwners([other, added], [added, other]), true);
    assert.equal(sameOwners([svcRef], [{ ...svcRef, uid: "x" }]), false);
  });

  it("a lost dependent is re-created from its journaled copy: user fields, owners re-linked, no server fields or status", () => {
    const journaled: KubeObject = {
      apiVersion: "example.com/v1", kind: "Widget",
      metadata: { name: "w", namespace: "shop", uid: "w-1", resourceVersion: "5", creationTimestamp: "t", managedFields: [], labels: { a: "b" }, ownerReferences: [svcRef, other] },
      spec: { size: 3 }, status: { ready: true },
    };
    assert.deepEqual(restorableCopy(journaled, new Map([["old-svc", "new-svc"]])), {
      apiVersion: "example.com/v1", kind: "Widget",
      metadata: { name: "w", namespace: "shop", labels: { a: "b" }, ownerReferences: [{ ...svcRef, uid: "new-svc" }, other] },
      spec: { size: 3 },
    });
  });

  it("Endpoints are the same when labels, annotations and subsets are, whatever their uid", () => {
    const a: KubeObject = { metadata: { uid: "1", labels: { l: "1" } }, subsets: [{ addresses: [{ ip: "192.168.0.1" }], ports: [{ port: 3306, protocol: "TCP" }] }] };
    assert.equal(sameEndpoints(a, { ...a, metadata: { ...a.metadata, uid: "2", resourceVersion: "7" } }), true);
    assert.equal(sameEndpoints(a, { ...a, subsets: [] }), false);
    assert.equal(sameEndpoints(a, undefined), false);
  });

  it("collection paths for core and grouped kinds", () => {
    assert.equal(collectionPath({ group: "", version: "v1", resource: "configmaps", kind: "ConfigMap" }, "shop"), "/api/v1/namespaces/shop/configmaps");
    assert.equal(collectionPath({ group: "discovery.k8s.io", version: "v1beta1", resource: "endpointslices", kind: "EndpointSlice" }), "/apis/discovery.k8s.io/v1beta1/endpointslices");
  });
});

describe("serviceMove: crash hook", () => {
  const run = (env: Record<string, string>) => spawnSync(process.execPath, [
    "-r", "ts-node/register/transpile-only", "-e",
    "require('./lib/serviceMove/faultHook').faultPoint('after-delete', 'shop/cart'); process.stdout.write('survived')",
  ], { cwd: REPO, env: { ...process.env, ...env }, encoding: "utf8" });

  it("SIGKILLs the process at the named point for the named Service (or any Service), and only there", () => {
    assert.equal(run({ [FAULT_ENV]: "after-delete:shop/cart" }).signal, "SIGKILL");
    assert.equal(run({ [FAULT_ENV]: "after-delete" }).signal, "SIGKILL");
    for (const env of [{ [FAULT_ENV]: "after-delete:shop/other" }, { [FAULT_ENV]: "after-create:shop/cart" }, { [FAULT_ENV]: "" }]) {
      const result = run(env);
      assert.equal(result.signal, null);
      assert.equal(result.stdout, "survived");
    }
  });

  it("has at least ten distinct points", () => {
    assert.ok(new Set(FAULT_POINTS).size >= 10);
  });
});

describe("serviceMove: addresses", () => {
});

describe("serviceMove: Plan → Service moves", () => {
  const service = (namespace: string, name: string, action: ServiceMove["action"], oldClusterIP?: string, newClusterIP?: string, type = "ClusterIP"): ServiceMove =>
    ({ namespace, name, type, oldClusterIP, newClusterIP, action, reason: "r", keepsOffset: true });
  const plan = {
    kubernetesService: { oldClusterIP: "10.96.0.1", newClusterIP: "10.100.0.1" },
    dns: { namespace: "kube-system", name: "kube-dns", oldClusterIP: "10.96.0.10", newClusterIP: "10.100.0.10" },
    services: [
      service("default", "kubernetes", "recreate", "10.96.0.1", "10.100.0.1"),
      service("kube-system", "kube-dns", "recreate", "10.96.0.10", "10.100.0.10"),
      service("shop", "cart", "recreate", "10.96.7.7", "10.100.7.7"),
      service("shop", "edge", "recreate", "10.96.7.8", "10.100.7.8", "LoadBalancer"),
      service("shop", "db", "unchanged", "None"),
      service("shop", "moved", "unchanged", "10.100.3.3", "10.100.3.3"),
    ],
  } as unknown as Plan;

  it("bulk moves exclude the kubernetes and DNS Services and everything unchanged; DNS gets its stand-in", () => {
    assert.deepEqual(serviceMovesFromPlan(plan), {
      moves: {
        "shop/cart": { fromIP: "10.96.7.7", toIP: "10.100.7.7", type: "ClusterIP" },
        "shop/edge": { fromIP: "10.96.7.8", toIP: "10.100.7.8", type: "LoadBalancer" },
      },
      kubernetesService: { fromIP: "10.96.0.1", toIP: "10.100.0.1" },
      dns: { namespace: "kube-system", name: "kube-dns", fromIP: "10.96.0.10", toIP: "10.100.0.10", standIn: { namespace: "kube-system", name: "kube-dns-cidr-migration-temp" } },
    });
  });

  it("after a finished migration the DNS Service is unchanged in the plan, so no DNS move", () => {
    const done = { ...plan, services: plan.services.map((s) => (s.name === "kube-dns" ? { ...s, action: "unchanged" as const } : s)) };
    assert.equal(serviceMovesFromPlan(done).dns, undefined);
  });

  it("stand-in names stay valid Service names", () => {
    assert.equal(standInName("coredns"), "coredns-cidr-migration-temp");
    const long = standInName("d".repeat(60));
    assert.equal(long, "dns-cidr-migration-temp");
  });
});
