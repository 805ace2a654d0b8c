// The live-traffic workload on the node lab (issue 14): `echo` (agnhost netexec, one replica per node, behind two
// Services) and the prober (prober/main.go), which resolves and calls those Services by name, and calls echo-a's
// ClusterIP from before the migration, as a client that cached it would. The prober writes its records to the lab's
// directory on the host (a hostPath), so they outlive its pods, which the node rollout evicts.
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { stringify } from "yaml";
import { resolveTestBedVersion, versionTable } from "../kubeVersion";
import { labDir } from "./labStack";

export const PROBE_NAMESPACE = "probe";
export const PROBED_SERVICES = ["echo-a", "echo-b"];
const REPLICAS = 3;

export function proberDir(): string {
  return path.join(labDir(), "prober");
}

function kubectl(kubeconfig: string, args: string[], stdin?: string): string {
  const result = spawnSync(path.join(labDir(), "bin", "kubectl"), ["--kubeconfig", kubeconfig, ...args], { input: stdin, encoding: "utf8" });
  if (result.status !== 0) throw new Error(`kubectl ${args.join(" ")} failed: ${(result.stderr || result.stdout).trim()}`);
  return result.stdout;
}

// every node, the control plane's too: the rollout then always has a replica elsewhere
const tolerations = [{ key: "node-role.kubernetes.io/control-plane", operator: "Exists", effect: "NoSchedule" }];
const spread = (app: string) => [{ maxSkew: 1, topologyKey: "kubernetes.io/hostname", whenUnsatisfiable: "ScheduleAnyway", labelSelector: { matchLabels: { app } } }];

function echoObjects(): object[] {
  const kube = resolveTestBedVersion(versionTable().newest).kube;
  return [
    { apiVersion: "v1", kind: "Namespace", metadata: { name: PROBE_NAMESPACE } },
    {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "echo", namespace: PROBE_NAMESPACE },
      spec: {
        replicas: REPLICAS,
        selector: { matchLabels: { app: "echo" } },
        template: {
          metadata: { labels: { app: "echo" } },
          spec: {
            tolerations,
            topologySpreadConstraints: spread("echo"),
            // netexec keeps serving for 5 s after SIGTERM, while kube-proxy takes the endpoint out
            terminationGracePeriodSeconds: 15,
            containers: [{
              name: "echo",
              image: `registry.k8s.io/e2e-test-images/agnhost:v${kube}-test-bed`,
              imagePullPolicy: "Never",
              args: ["netexec", "--http-port=80", "--delay-shutdown=5"],
              readinessProbe: { httpGet: { path: "/readyz", port: 80 }, periodSeconds: 1 },
            }],
          },
        },
      },
    },
    { apiVersion: "policy/v1", kind: "PodDisruptionBudget", metadata: { name: "echo", namespace: PROBE_NAMESPACE }, spec: { minAvailable: REPLICAS - 1, selector: { matchLabels: { app: "echo" } } } },
    ...PROBED_SERVICES.map((name) => ({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name, namespace: PROBE_NAMESPACE },
      spec: { selector: { app: "echo" }, ports: [{ port: 80, targetPort: 80 }] },
    })),
  ];
}

function proberObject(oldIps: string[], dnsRate: number): object {
  const env = (name: string, fieldPath: string) => ({ name, valueFrom: { fieldRef: { fieldPath } } });
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "prober", namespace: PROBE_NAMESPACE },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: "prober" } },
      template: {
        metadata: { labels: { app: "prober" } },
        spec: {
          tolerations,
          topologySpreadConstraints: spread("prober"),
          containers: [{
            name: "prober",
            image: "cidr-migration.test/prober:test-bed",
            imagePullPolicy: "Never",
            env: [
              env("POD_NAME", "metadata.name"),
              env("NODE_NAME", "spec.nodeName"),
              { name: "PROBE_OUT", value: "/probe" },
              { name: "PROBE_NAMES", value: PROBED_SERVICES.join(",") },
              { name: "PROBE_OLD_IPS", value: oldIps.join(",") },
              { name: "PROBE_DNS_RATE", value: String(dnsRate) },
            ],
            volumeMounts: [{ name: "out", mountPath: "/probe" }],
          }],
          volumes: [{ name: "out", hostPath: { path: proberDir(), type: "DirectoryOrCreate" } }],
        },
      },
    },
  };
}

const manifest = (objects: object[]) => objects.map((o) => stringify(o)).join("---\n");

/**
 * Starts echo and its Services, then the prober, each ready; returns echo-a's ClusterIP, the one the prober calls
 * as a cached address. `dnsRate` lookups per second per prober pod.
 */
export function startProbeWorkload(kubeconfig: string, dnsRate = 25): { cachedIp: string } {
  fs.rmSync(proberDir(), { recursive: true, force: true });
  fs.mkdirSync(proberDir(), { recursive: true });
  kubectl(kubeconfig, ["apply", "-f", "-"], manifest(echoObjects()));
  kubectl(kubeconfig, ["-n", PROBE_NAMESPACE, "rollout", "status", "deployment/echo", "--timeout=180s"]);
  const cachedIp = kubectl(kubeconfig, ["-n", PROBE_NAMESPACE, "get", "service", PROBED_SERVICES[0], "-o", "jsonpath={.spec.clusterIP}"]).trim();
  kubectl(kubeconfig, ["apply", "-f", "-"], manifest([proberObject([cachedIp], dnsRate)]));
  kubectl(kubeconfig, ["-n", PROBE_NAMESPACE, "rollout", "status", "deployment/prober", "--timeout=180s"]);
  return { cachedIp };
}

/** Stops the prober (each pod writes its last second and any open outage on SIGTERM) and waits until its pods are gone. */
export function stopProber(kubeconfig: string): void {
  kubectl(kubeconfig, ["-n", PROBE_NAMESPACE, "delete", "deployment", "prober", "--wait=true", "--timeout=120s"]);
  try {
    kubectl(kubeconfig, ["-n", PROBE_NAMESPACE, "wait", "--for=delete", "pod", "-l", "app=prober", "--timeout=120s"]);
  } catch (err) {
    if (!/no matching resources/.test(String(err))) throw err; // already gone
  }
}

/**
 * Every record the prober pods wrote, each file's lines parsed, and each tagged with the node its pod ran on (from the
 * file's "start" record), so an outage says which node saw it.
 */
export function readProberRecords(): Array<Record<string, unknown>> {
  const dir = proberDir();
  return fs.readdirSync(dir).filter((f) => f.endsWith(".jsonl")).flatMap((f) => {
    const records = fs.readFileSync(path.join(dir, f), "utf8").split("\n").filter((l) => l.trim().startsWith("{")).flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return []; // a line cut short when its pod was killed
      }
    });
    const seenFrom = records.find((r) => r.kind === "start")?.node;
    return records.map((r) => ({ ...r, seenFrom }));
  });
}
