import { MigrationConfig } from "../config/migrationConfig";
import { familyOf, urlHost } from "../net/cidr";
import { NodeAddressPlan, NodeAddressStep } from "./nodeAddressPlan";

/**
 * Pure: the node address changes of a `platform: openshift` stack as the oc steps an operator carries out by hand
 * (issue 16). OpenShift's operators own its etcd members, certificates and static pods, and it cannot run on this
 * project's test bed, so cidr-migration plans these steps and never runs them. The order is the planner's: workers
 * first (the canary alone), then each control-plane node alone, etcd quorum checked before and after each.
 */

export interface RunbookSection {
  title: string;
  /** Shell lines to run, with `#` lines saying what to check. */
  commands: string[];
}

export interface OpenShiftRunbook {
  /** Said before anything else: the Machine API, and that none of this is run or tested by cidr-migration. */
  warnings: string[];
  sections: RunbookSection[];
}

const MACHINE_API = "openshift-machine-api";

/** nmcli's setting for the address's family. */
const nmcliFamily = (ip: string) => (familyOf(ip) === "IPv6" ? "ipv6" : "ipv4");

/** The etcd quorum check: the etcd operator's own condition names how many members are available. */
const QUORUM_CHECK = [
  `oc get etcd cluster -o jsonpath='{.status.conditions[?(@.type=="EtcdMembersAvailable")].message}{"\\n"}'`,
  "# go on only when it says every member is available (e.g. \"3 of 3 members are available\")",
];

function drain(name: string, config: MigrationConfig): string[] {
  return [
    `oc adm cordon ${name}`,
    `oc adm drain ${name} --ignore-daemonsets --delete-emptydir-data --timeout=${config.nodeRollout.drainTimeoutSeconds}s`,
  ];
}

/** The host's own address, then a reboot: RHCOS picks the kubelet's node IP at boot (nodeip-configuration.service). */
function changeAddress(step: NodeAddressStep, config: MigrationConfig): string[] {
  const prefix = step.prefix ?? "<prefix>";
  const iface = config.hostAddress?.interface ?? "<interface>";
  const family = nmcliFamily(step.to);
  // reached at its SSH host: the old address, or a management address the change leaves alone
  const host = config.nodes.find((n) => n.name === step.name)?.host ?? step.from;
  return [
    `# static addresses (UPI, bare metal); on installer-provisioned clusters change the address where the platform assigns it (DHCP reservation, cloud NIC) instead`,
    `# if /etc/default/nodeip-configuration sets KUBELET_NODEIP_HINT, point it at ${step.to} first`,
    `ssh core@${host} 'CON=$(nmcli -g GENERAL.CONNECTION device show ${iface}) && sudo nmcli connection modify "$CON" ${family}.addresses ${step.to}/${prefix} && sudo systemctl reboot'`,
    `# (add ${family}.gateway to that command when the new address is on another subnet)`,
  ];
}

function rejoin(step: NodeAddressStep): string[] {
  return [
    `# the kubelet asks for a serving certificate naming ${step.to}: approve only ${step.name}'s pending requests`,
    `oc get csr | grep Pending | grep 'system:node:${step.name}'`,
    `oc adm certificate approve <each name listed above>`,
    `oc wait --for=condition=Ready node/${step.name} --timeout=15m`,
    `oc get node ${step.name} -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}{"\\n"}'`,
    `# must print ${step.to}`,
    `oc get node ${step.name} -o jsonpath='{.metadata.annotations.k8s\\.ovn\\.org/node-primary-ifaddr}{"\\n"}'`,
    `# OVN-Kubernetes' tunnel endpoint must name ${step.to}; if it still names ${step.from}, restart the node's ovnkube-node pod:`,
    `oc delete pod -n openshift-ovn-kubernetes -l app=ovnkube-node --field-selector spec.nodeName=${step.name}`,
  ];
}

function etcdPeerUpdate(step: NodeAddressStep): string[] {
  return [
    `# before the reboot, from an etcd pod on another control-plane node: point ${step.name}'s member at its new peer URL`,
    `oc rsh -n openshift-etcd -c etcdctl <etcd pod of another control-plane node> etcdctl member list -w table`,
    `oc rsh -n openshift-etcd -c etcdctl <that pod> etcdctl member update <ID of ${step.name}> --peer-urls=https://${urlHost(step.to)}:2380`,
  ];
}

function certificatesAndRedeploy(step: NodeAddressStep, stamp: string): string[] {
  const reason = `node-address-${step.name}-${stamp}`;
  return [
    `# the etcd operator re-issues ${step.name}'s etcd certificates with its new address once the old ones are gone`,
    `oc delete secret -n openshift-etcd etcd-peer-${step.name} etcd-serving-${step.name} etcd-serving-metrics-${step.name}`,
    `oc patch etcd cluster --type=merge -p '{"spec":{"forceRedeploymentReason":"${reason}"}}'`,
    `oc wait clusteroperator/etcd --for=condition=Progressing=False --timeout=30m`,
    `oc patch kubeapiserver cluster --type=merge -p '{"spec":{"forceRedeploymentReason":"${reason}"}}'`,
    `oc wait clusteroperator/kube-apiserver --for=condition=Progressing=False --timeout=30m`,
  ];
}

/** `stamp` makes each forced redeployment's reason new (the operators act on a change of it); the date of the plan. */
export function openShiftRunbook(plan: NodeAddressPlan, config: MigrationConfig, stamp: string): OpenShiftRunbook {
  const keeper = config.nodes.find((n) => n.role === "control-plane" && !plan.steps.some((s) => s.name === n.name))?.name ?? "<a control-plane node whose address stays>";
  const warnings = [
    "Planned only: cidr-migration does not run these steps on OpenShift, and none of them is tested by it (OpenShift cannot run on its test bed). Check each against Red Hat's documentation for your version before you start.",
    `Machine API (installer-provisioned clusters): a MachineHealthCheck deletes a Machine whose node stays NotReady, and its MachineSet then creates a new machine, with a new name and address. Scaling a MachineSet down deletes machines too. So never scale a MachineSet down and never delete a Node or Machine during this change: pause every MachineHealthCheck first, and resume them after the last node.`,
  ];
  const sections: RunbookSection[] = [
    {
      title: "Before the first node",
      commands: [
        `oc get machinesets,machinehealthchecks -n ${MACHINE_API}`,
        `oc annotate machinehealthcheck -n ${MACHINE_API} --all cluster.x-k8s.io/paused=""`,
        `oc debug node/${keeper} -- chroot /host /usr/local/bin/cluster-backup.sh /home/core/assets/backup`,
        ...QUORUM_CHECK,
      ],
    },
  ];
  for (const step of plan.steps) {
    const what = `batch ${step.batch}: ${step.name} (${step.role}${step.canary ? ", canary" : ""}) ${step.from} → ${step.to}`;
    if (step.role === "worker") {
      sections.push({ title: what, commands: [...drain(step.name, config), ...changeAddress(step, config), ...rejoin(step), `oc adm uncordon ${step.name}`] });
      continue;
    }
    sections.push({
      title: `${what}, alone: its etcd member is away until it is back`,
      commands: [
        ...QUORUM_CHECK,
        ...drain(step.name, config),
        ...etcdPeerUpdate(step),
        ...changeAddress(step, config),
        ...rejoin(step),
        ...certificatesAndRedeploy(step, stamp),
        ...QUORUM_CHECK,
        `oc adm uncordon ${step.name}`,
      ],
    });
  }
  sections.push({
    title: "After the last node",
    commands: [
      `oc annotate machinehealthcheck -n ${MACHINE_API} --all cluster.x-k8s.io/paused-`,
      "oc get clusteroperators",
      "# every operator Available=True, Progressing=False, Degraded=False",
      `# outside the cluster: DNS records (api, api-int), load-balancer backends and monitoring targets that name ${plan.steps.map((s) => s.from).join(", ")}`,
    ],
  });
  return { warnings, sections };
}
