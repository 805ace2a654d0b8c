import { untestedEtcdVersion, TESTED_ETCD_MINORS } from "../etcdRewrite/rewriteGuards";
import { readStoredValue } from "../etcdRewrite/storedValue";
import { Finding } from "../report/findings";
import { PreflightInput } from "./checkInput";
import { SampledKey } from "./etcdProbe";

/**
 * services.strategy etcd-rewrite edits stored bytes itself: it needs an etcd version it was tested on, and values
 * the apiserver wrote as protobuf or JSON, not encrypted at rest (it never decrypts). The rewrite refuses both right
 * before it writes, with the apiservers already stopped; preflight refuses them before anything changes.
 *
 * Only what the probe read is judged. An etcd that did not answer, or was not checked, is ETCD_UNREACHABLE or
 * ETCD_CHECK_SKIPPED already (etcd.ts).
 */

const RECREATE = "use services.strategy: recreate";

export function checkEtcdRewriteStorage(input: PreflightInput): Finding[] {
  const probe = input.etcd;
  if (input.config.services.strategy !== "etcd-rewrite" || !probe || probe.skippedReason) return [];
  const findings: Finding[] = [];
  const tested = TESTED_ETCD_MINORS.map((m) => `${m}.x`).join(", ");
  for (const s of probe.statuses) {
    if (!s.ok || untestedEtcdVersion(s.version) === undefined) continue;
    findings.push({
      code: "ETCD_REWRITE_UNTESTED_ETCD",
      severity: "blocker",
      object: `etcd ${s.endpoint}`,
      message: `runs etcd ${s.version}, a version services.strategy etcd-rewrite was not tested on (${tested}); the rewrite would refuse it after stopping the apiservers`,
      action: `${RECREATE}, or upgrade etcd to a tested version first`,
    });
  }

  const sample = probe.rewriteSample;
  if (!sample) return findings;
  if (sample.error !== undefined) {
    // a read failing where every status request answered is news; otherwise ETCD_UNREACHABLE has said it
    if (probe.statuses.every((s) => s.ok)) {
      findings.push({
        code: "ETCD_REWRITE_READ_FAILED",
        severity: "blocker",
        object: `etcd ${probe.endpoints.join(",")}`,
        message: `reading one key under ${sample.servicePrefix} and ${sample.nodePrefix} failed: ${sample.error}; the rewrite reads every key there`,
        action: `give preflight etcd credentials that may read ${sample.servicePrefix} and ${sample.nodePrefix} (the apiserver's, /etc/kubernetes/pki/apiserver-etcd-client.crt/.key), or ${RECREATE}`,
      });
    }
    return findings;
  }
  findings.push(...judgeSample("Service", sample.servicePrefix, sample.service, true));
  findings.push(...judgeSample("Node", sample.nodePrefix, sample.node, input.cluster.nodes.length > 0));
  return findings;
}

/** "Service default/kubernetes" from /registry/services/specs/default/kubernetes. */
function objectOf(kind: "Service" | "Node", prefix: string, key: string): string {
  return `${kind} ${key.startsWith(prefix) ? key.slice(prefix.length) : key}`;
}

function judgeSample(kind: "Service" | "Node", prefix: string, sampled: SampledKey | undefined, expected: boolean): Finding[] {
  if (!sampled) {
    // every cluster has Service default/kubernetes; nothing there means the rewrite would look in the wrong place
    if (!expected) return [];
    return [{
      code: "ETCD_REWRITE_KEYS_MISSING",
      severity: "blocker",
      object: `etcd keys ${prefix}`,
      message: `no ${kind} is stored under ${prefix}, where services.strategy etcd-rewrite reads them: the apiservers use another --etcd-prefix, or cidr-migration:etcd.endpoints is not this cluster's etcd`,
      action: `check cidr-migration:etcd.endpoints and the apiservers' --etcd-prefix (the rewrite reads kubeadm's default, /registry), or ${RECREATE}`,
    }];
  }
  const stored = readStoredValue(sampled.value);
  const object = objectOf(kind, prefix, sampled.key);
  if (stored.format === "encrypted") {
    return [{
      code: "ETCD_REWRITE_ENCRYPTED",
      severity: "blocker",
      object,
      message: `etcd key ${sampled.key} is encrypted at rest (k8s:enc:${stored.provider}: an EncryptionConfiguration covers ${kind === "Service" ? "services" : "nodes"}): services.strategy etcd-rewrite never decrypts, so it cannot move ${kind === "Service" ? "ClusterIPs" : "podCIDRs"}`,
      action: `${RECREATE} (it moves each object through the apiserver, which decrypts and encrypts)`,
    }];
  }
  if (stored.format === "unknown") {
    return [{
      code: "ETCD_REWRITE_STORAGE_FORMAT",
      severity: "blocker",
      object,
      message: `etcd key ${sampled.key} holds ${stored.reason}: services.strategy etcd-rewrite rewrites only the protobuf or JSON the apiserver writes`,
      action: RECREATE,
    }];
  }
  return [];
}
