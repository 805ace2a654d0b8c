/**
 * The rollback runbook for a kubeadm control plane with stacked etcd: put the cluster back to an etcd snapshot
 * and the manifests saved before the migration. Built from typed inputs only, so it prints the exact commands
 * for one cluster; every value goes through the one quoting helper, lib/remote/shellQuote.
 *
 * Order (from etcd's disaster-recovery guide and kubeadm's restore practice):
 * 1. copy the snapshot to every control-plane node;
 * 2. stop the static pods and kubelet on EVERY control-plane node first: no member may run while others restore;
 * 3. restore each member's data dir from the same snapshot (the old dir is kept aside, never deleted);
 * 4. put the backed-up manifests back;
 * 5. start kubelet everywhere, which starts etcd and the control plane again;
 * 6. check etcd and apiserver health.
 */

import { shellQuote as q } from "../remote/shellQuote";

export const DEFAULTS = {
  dataDir: "/var/lib/etcd",
  manifestDir: "/etc/kubernetes/manifests",
  manifestBackupDir: "/etc/kubernetes/cidr-migration-backup/manifests",
  remoteSnapshotPath: "/var/lib/cidr-migration/etcd-restore.db",
  initialClusterToken: "etcd-cluster",
  etcdPkiDir: "/etc/kubernetes/pki/etcd",
  adminKubeconfig: "/etc/kubernetes/admin.conf",
  etcdClientPort: 2379,
  etcdPeerPort: 2380,
} as const;

/** Static pods a kubeadm control-plane node runs; their containers must be gone before etcd's data is replaced. */
const CONTROL_PLANE_CONTAINERS = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"];

export interface ControlPlaneMember {
  /** Kubernetes node name. */
  nodeName: string;
  /** Address to reach the node over SSH; etcd's peer and client URLs use it too unless given. */
  host: string;
  sshPort: number;
  sshUser: string;
  /** etcd member name; kubeadm names the member after the node. */
  etcdName: string;
  /** e.g. https://10.0.0.11:2380 */
  peerUrl: string;
  /** e.g. https://10.0.0.11:2379 */
  clientUrl: string;
}

export interface RestoreRunbookInput {
  /** The verified snapshot on the machine running this tool. */
  snapshotPath: string;
  snapshotSha256: string;
  members: ControlPlaneMember[];
  dataDir: string;
  manifestDir: string;
  manifestBackupDir: string;
  remoteSnapshotPath: string;
  initialClusterToken: string;
  etcdPkiDir: string;
  adminKubeconfig: string;
  /** Appended to the data dir kept aside, e.g. "20260101T120000Z", so a second rollback never clobbers the first. */
  stamp: string;
}

export type StepLocation = { kind: "local" } | { kind: "node"; member: ControlPlaneMember };

export interface RunbookStep {
  title: string;
  where: StepLocation;
  commands: string[];
}

/** kubeadm's --initial-cluster value: every member as name=peerUrl, in the given order. */
export function initialClusterOf(members: ControlPlaneMember[]): string {
  return members.map((m) => `${m.etcdName}=${m.peerUrl}`).join(",");
}

export interface EtcdRestoreArgs {
  snapshotPath: string;
  dataDir: string;
  name: string;
  initialCluster?: string;
  initialAdvertisePeerUrls?: string;
  initialClusterToken?: string;
}

/** argv for `etcdctl snapshot restore` (without the leading "etcdctl"); shared by the runbook, the CLI and the provider's proof. */
export function etcdctlRestoreArgs(args: EtcdRestoreArgs): string[] {
  const argv = ["snapshot", "restore", args.snapshotPath, "--data-dir", args.dataDir, "--name", args.name];
  if (args.initialCluster !== undefined) argv.push("--initial-cluster", args.initialCluster);
  if (args.initialAdvertisePeerUrls !== undefined) argv.push("--initial-advertise-peer-urls", args.initialAdvertisePeerUrls);
  if (args.initialClusterToken !== undefined) argv.push("--initial-cluster-token", args.initialClusterToken);
  return argv;
}

export function validateRunbookInput(input: RestoreRunbookInput): void {
  if (input.members.length === 0) {
    throw new Error("no control-plane nodes: add nodes with role control-plane to the stack config (cidr-migration:nodes)");
  }
  const seen = new Set<string>();
  for (const m of input.members) {
    if (seen.has(m.etcdName)) throw new Error(`etcd member name "${m.etcdName}" appears twice: every control-plane node needs its own member name`);
    seen.add(m.etcdName);
  }
  for (const [key, value] of Object.entries({ dataDir: input.dataDir, manifestDir: input.manifestDir, manifestBackupDir: input.manifestBackupDir, remoteSnapshotPath: input.remoteSnapshotPath })) {
    if (!value.startsWith("/") || value === "/") throw new Error(`${key} "${value}" must be an absolute path on the node, not "/"`);
  }
}

export function buildRestoreRunbook(input: RestoreRunbookInput): RunbookStep[] {
  validateRunbookInput(input);
  const local: StepLocation = { kind: "local" };
  const on = (member: ControlPlaneMember): StepLocation => ({ kind: "node", member });
  const initialCluster = initialClusterOf(input.members);
  const snapshot = q(input.remoteSnapshotPath);
  const dataDir = q(input.dataDir);
  const manifestDir = q(input.manifestDir);
  const asideManifests = q(`${input.manifestDir}.before-restore-${input.stamp}`);
  const asideData = q(`${input.dataDir}.before-restore-${input.stamp}`);
  const containerPattern = q(`^(${CONTROL_PLANE_CONTAINERS.join("|")})$`);
  const pki = (file: string): string => q(`${input.etcdPkiDir}/${file}`);
  const etcdTls = `--cacert ${pki("ca.crt")} --cert ${pki("healthcheck-client.crt")} --key ${pki("healthcheck-client.key")}`;
  const kubectl = `sudo kubectl --kubeconfig ${q(input.adminKubeconfig)}`;
  const steps: RunbookStep[] = [];

  steps.push({
    title: "Copy the snapshot to every control-plane node",
    where: local,
    commands: input.members.map((m) => `scp -P ${q(String(m.sshPort))} ${q(input.snapshotPath)} ${q(`${m.sshUser}@${m.host}:${input.remoteSnapshotPath}`)}`),
  });
  for (const m of input.members) {
    steps.push({
      title: `Check the copy on ${m.nodeName}`,
      where: on(m),
      // The trailer is the sha256 of everything before it: the same check etcdctl's restore makes.
      commands: [`test "$(sudo head -c -32 ${snapshot} | sha256sum | cut -d ' ' -f 1)" = ${q(input.snapshotSha256)}`],
    });
  }
  for (const m of input.members) {
    steps.push({
      title: `Stop the static pods and kubelet on ${m.nodeName}`,
      where: on(m),
      commands: [
        // Moving the manifests out of the watched dir makes kubelet stop the static pods.
        `sudo mkdir -p ${asideManifests}`,
        `sudo find ${manifestDir} -maxdepth 1 -name '*.yaml' -exec mv -t ${asideManifests} {} +`,
        `until [ -z "$(sudo crictl ps -q --name ${containerPattern})" ]; do sleep 2; done`,
        "sudo systemctl stop kubelet",
      ],
    });
  }
  for (const m of input.members) {
    steps.push({
      title: `Restore etcd member ${m.etcdName} on ${m.nodeName}`,
      where: on(m),
      commands: [
        // Kept aside, never deleted: it is the way back if the restore itself goes wrong.
        `if sudo test -e ${dataDir}; then sudo mv ${dataDir} ${asideData}; fi`,
        // etcdutl: etcd 3.6's etcdctl has no `snapshot restore` (etcdutl has it since 3.5, same arguments)
        `sudo etcdutl snapshot restore ${snapshot} --data-dir ${dataDir} --name ${q(m.etcdName)}`
          + ` --initial-cluster ${q(initialCluster)} --initial-advertise-peer-urls ${q(m.peerUrl)} --initial-cluster-token ${q(input.initialClusterToken)}`,
      ],
    });
  }
  for (const m of input.members) {
    steps.push({
      title: `Put the backed-up manifests back on ${m.nodeName}`,
      where: on(m),
      commands: [
        `sudo test -f ${q(`${input.manifestBackupDir}/kube-apiserver.yaml`)}`,
        `sudo cp -p ${q(input.manifestBackupDir)}/*.yaml ${manifestDir}/`,
      ],
    });
  }
  for (const m of input.members) {
    steps.push({ title: `Start kubelet on ${m.nodeName}`, where: on(m), commands: ["sudo systemctl start kubelet"] });
  }
  const first = input.members[0];
  steps.push({
    title: "Check etcd and apiserver health",
    where: on(first),
    commands: [
      `sudo env ETCDCTL_API=3 etcdctl --endpoints ${q(input.members.map((m) => m.clientUrl).join(","))} ${etcdTls} endpoint health`,
      `sudo env ETCDCTL_API=3 etcdctl --endpoints ${q(first.clientUrl)} ${etcdTls} member list -w table`,
      `${kubectl} get --raw '/readyz?verbose'`,
      `${kubectl} get nodes -o wide`,
    ],
  });
  return steps;
}

function locationLabel(where: StepLocation): string {
  if (where.kind === "local") return "on this machine";
  const m = where.member;
  return `on ${m.nodeName}: ssh -p ${q(String(m.sshPort))} ${q(`${m.sshUser}@${m.host}`)}`;
}

export function renderRunbook(input: RestoreRunbookInput, steps: RunbookStep[]): string {
  const lines = [
    `# Rollback runbook: restore etcd from ${input.snapshotPath}`,
    `# snapshot database sha256 ${input.snapshotSha256} (verified)`,
    `# control-plane members: ${input.members.map((m) => `${m.etcdName}@${m.host}`).join(", ")}`,
    "# Run the steps in order; do not start a step before the previous one succeeded on every node it names.",
    "",
  ];
  steps.forEach((step, index) => {
    lines.push(`## ${index + 1}. ${step.title} (${locationLabel(step.where)})`);
    for (const c of step.commands) lines.push(c);
    lines.push("");
  });
  return lines.join("\n");
}
