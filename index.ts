// The composition root: the runbook's table of contents. Config → discovery (read-only) → Plan → resources, phase by
// phase, each phase depending explicitly on the one before, so `pulumi preview` shows the whole ordered graph and
// touches nothing, and `pulumi up` stops at the first step that cannot prove success.
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { ApiserverCerts } from "./components/apiserverCerts";
import { calicoPoolMove } from "./components/calicoPoolMove";
import { CiliumConfig } from "./components/ciliumConfig";
import { ClusterConfig, clusterConfigEdits, kubeletConfigMapName } from "./components/clusterConfig";
import { checkLiveKeyEdits, useConfigMapReader } from "./components/liveConfigMaps";
import { liveConfigMapKey } from "./components/systemObjectPatch";
import { ControlPlane, EnableCidrAllocation } from "./components/controlPlane";
import { ControlPlaneStart } from "./components/controlPlaneRewrite";
import { declareRewriteWindow } from "./components/etcdRewriteWindow";
import { DnsFinalSwap, DnsTemporaryService } from "./components/dnsContinuity";
import { FlannelConfig, flannelConfigEdit } from "./components/flannelConfig";
import { KubeProxyConfig, kubeProxyConfigEdit } from "./components/kubeProxyConfig";
import { PlanOrder } from "./components/planOrder";
import { readStackConfig, secretInput } from "./components/stackConfig";
import { Verification } from "./dynamic-providers/clusterAudit";
import { declareRunStart } from "./components/runStart";
import { declareControlPlaneAddress, declareNodeAddressRun, declareNodeRollout } from "./components/nodeAddressRun";
import { planAddressRun } from "./lib/plan/addressRunPlan";
import { movesRanges } from "./lib/config/migrationConfig";
import { ServiceCidrSwitch } from "./dynamic-providers/serviceCidrSwitch";
import { OldIpBridgeRemoval } from "./dynamic-providers/oldIpBridgeRemoval";
import { dnsBudgetAroundRollout } from "./components/dnsBudgetAroundRollout";
import { ServiceRecreation } from "./dynamic-providers/serviceRecreation";
import { discoverForRun } from "./components/runDiscovery";
import { UserError } from "./lib/config/errors";
import { kubeconfigText, loadKubeConfig } from "./lib/config/kubeClient";
import { rangeLists } from "./lib/config/rangeLists";
import { flannelTransitionNetwork } from "./lib/plan/phases";
import { buildPlan } from "./lib/plan/plan";
import { refuseControlPlaneAddressProblems } from "./lib/plan/controlPlaneAddressRefusals";
import { controlPlaneRejoins } from "./lib/nodeMove/controlPlaneRejoin";
import { controlPlaneNames, planNodeAddresses } from "./lib/plan/nodeAddressPlan";
import { kubernetesServiceIP } from "./lib/net/cidr";
import { NODE_STEP_PREFIX, SERVICE_STEP_PREFIX, stepId } from "./lib/plan/stepIds";
import { serviceMovesFromPlan } from "./lib/serviceMove/planMoves";

const KUBEADM_CONFIG = { namespace: "kube-system", configMap: "kubeadm-config", key: "ClusterConfiguration" };

export = async () => {
  // Bad input stops here, before discovery and before any resource exists.
  const firstRead = readStackConfig();
  if (!firstRead.ssh.privateKey) {
    // The CLI plans without it; the graph cannot: every node step runs over SSH.
    throw new pulumi.RunError("cidr-migration:ssh.privateKey is missing; the node steps run over SSH — set it with: pulumi config set --secret --path 'ssh.privateKey' < ~/.ssh/id_ed25519");
  }
  const kc = userErrorsAsRunErrorsSync(() => loadKubeConfig(firstRead.kubeconfig, "cidr-migration:kubeconfig"));
  // live, or (an etcd rewrite under way) the cluster as the run found it at its start: components/runDiscovery.ts
  const discovery = await userErrorsAsRunErrors(() => discoverForRun(kc, firstRead));
  const inventory = discovery.inventory;
  // The system ConfigMaps the graph edits are read here, like discovery, not as resources (components/liveConfigMaps.ts).
  const readConfigMap = (namespace: string, name: string) => userErrorsAsRunErrors(() => discovery.reader(namespace, name));
  const config = readStackConfig({ inventory });
  const kubeconfig = pulumi.secret(userErrorsAsRunErrorsSync(() => kubeconfigText(config.kubeconfig, "cidr-migration:kubeconfig")));
  const runId = config.snapshot.trigger;
  const ssh = { user: config.ssh.user, privateKey: secretInput(config.ssh.privateKey, "cidr-migration:ssh.privateKey")! };
  const controlPlaneNodes = config.nodes.filter((n) => n.role === "control-plane");
  const nodeAccess = { nodes: controlPlaneNodes, ssh, runId };
  const etcdTls = {
    etcdCaCert: secretInput(config.etcd.caCert, "cidr-migration:etcd.caCert"),
    etcdCert: secretInput(config.etcd.cert, "cidr-migration:etcd.cert"),
    etcdKey: secretInput(config.etcd.key, "cidr-migration:etcd.key"),
  };

  // Node addresses: workers move with the rollout; control-plane nodes after everything else, one at a time, unless a
  // reference every node dials (controlPlaneEndpoint, the stack's own kubeconfig or etcd endpoints) sits on one.
  const addressPlan = userErrorsAsRunErrorsSync(() => planNodeAddresses(config, inventory));
  const roleOf = new Map(addressPlan.steps.map((s) => [s.name, s.role]));
  const workerAddressChanges = config.nodeAddresses.filter((c) => roleOf.get(c.name) === "worker");
  const controlPlaneAddressChanges = addressPlan.steps.filter((s) => s.role === "control-plane").map((s) => ({ ...config.nodeAddresses.find((c) => c.name === s.name)!, role: s.role }));
  if (controlPlaneAddressChanges.length > 0) {
    const clusterConfiguration = await readConfigMap(KUBEADM_CONFIG.namespace, KUBEADM_CONFIG.configMap).then((data) => data?.[KUBEADM_CONFIG.key]);
    userErrorsAsRunErrorsSync(() => refuseControlPlaneAddressProblems(controlPlaneAddressChanges, {
      clusterConfiguration, kubeconfigServer: kc.getCurrentCluster()?.server, etcdEndpoints: config.etcd.endpoints,
      controlPlaneNodes: controlPlaneNames(config, inventory).size,
    }));
  }

  if (!movesRanges(config)) {
    // nodeAddresses alone: the address plan's workers and control-plane nodes, nothing of a range move
    const plan = userErrorsAsRunErrorsSync(() => planAddressRun(config, inventory, addressPlan));
    useConfigMapReader(readConfigMap);
    const order = new PlanOrder(plan);
    const run = declareNodeAddressRun(order, {
      plan, config, kubeconfig, nodeAccess, etcdTls, host: config.hostAddress!,
      workerChanges: workerAddressChanges, controlPlaneChanges: controlPlaneAddressChanges,
    });
    order.check();
    discovery.finish(run.preflight.blockers);
    return {
      nodeAddresses: addressPlan.steps.map((s) => ({ name: s.name, from: s.from, to: s.to })),
      nodesMoving: addressPlan.steps.length,
      estimate: { oursSeconds: plan.estimate.oursSeconds, manualRunbookMinutes: plan.estimate.manualMinutes, nodes: run.nodes.estimate },
      verifyWarnings: run.verify.warnings,
    };
  }
  const plan = userErrorsAsRunErrorsSync(() => buildPlan(config, inventory));

  // each one range, or a dual-stack pair comma-separated, as the flags and kubeadm list them
  const ranges = rangeLists(config);
  // The system ConfigMaps' edits, tried on what the cluster holds before any resource exists: one a component would
  // refuse inside the graph hangs the run instead of failing it (components/liveConfigMaps.ts).
  const clusterConfigArgs = {
    podCidr: ranges.pod.to,
    serviceCidr: ranges.service.to,
    clusterDns: [plan.dns.newClusterIP],
    kubeletConfigMapName: inventory.kubeletConfig?.configMapName ?? kubeletConfigMapName(inventory.serverVersion),
    patchKubeletConfig: inventory.kubeletConfig !== undefined,
  };
  const flannelNetworks = { transition: flannelTransitionNetwork(ranges.pod), final: ranges.pod.to };
  // where discovery found flannel: kube-flannel in current manifests, kube-system in older ones
  const flannelAt = { namespace: inventory.cni.flannelNamespace, daemonSetName: inventory.cni.flannelDaemonSet };
  await userErrorsAsRunErrors(() => checkLiveKeyEdits(readConfigMap, [
    ...clusterConfigEdits(clusterConfigArgs),
    kubeProxyConfigEdit({ podCidr: ranges.pod.to }),
    ...(plan.cni === "flannel" ? [flannelConfigEdit({ podCidr: flannelNetworks.transition, ...flannelAt }), flannelConfigEdit({ podCidr: flannelNetworks.final, ...flannelAt })] : []),
  ]));
  // kubeadm-rejoin: the control-plane nodes etcd can spare are reset and joined again as such; the others re-register
  const controlPlaneRejoin = config.nodeRollout.strategy === "kubeadm-rejoin"
    ? controlPlaneRejoins(config.nodes.filter((n) => n.role === "control-plane").map((n) => ({
      name: n.name,
      addresses: inventory.nodes.find((i) => i.name === n.name)?.internalIPs ?? [],
      addressMoves: config.nodeAddresses.some((c) => c.name === n.name),
    })), {
      clusterConfiguration: await readConfigMap(KUBEADM_CONFIG.namespace, KUBEADM_CONFIG.configMap).then((data) => data?.[KUBEADM_CONFIG.key]),
      kubeconfigServer: kc.getCurrentCluster()?.server,
      etcdEndpoints: config.etcd.endpoints,
      controlPlaneNodes: controlPlaneNames(config, inventory).size,
    })
    : undefined;
  for (const { name, reason } of controlPlaneRejoin?.reregistered ?? []) void pulumi.log.info(`nodeRollout.strategy kubeadm-rejoin: control-plane node ${name} re-registers instead: ${reason}`);
  // The components read through the module's one reader: set only now, with no await before they are declared, so
  // they read this run's cluster even when a fleet runs several programs in one process.
  useConfigMapReader(readConfigMap);

  // Each resource names the plan steps it carries out; order.check() proves the graph keeps the plan's order.
  const order = new PlanOrder(plan);
  const stepsUnder = (prefix: string, except?: (id: string) => boolean) => order.steps((id) => id.startsWith(prefix) && !except?.(id));
  const isCertStep = (id: string) => id.endsWith("/apiserver-cert");
  const isAllocationStep = (id: string) => id.startsWith(stepId.enableAllocation(""));

  // 1. preflight: blockers stop everything. 2. snapshot: nothing changes before one exists that is proven to restore.
  const { preflight, snapshot } = declareRunStart(order, { kubeconfig, config, runId, etcdTls });

  // 3-5. the control plane and the Services: through the API (recreate), or in etcd while the apiservers are stopped
  //      (etcd-rewrite). Either way, what follows waits for `servicesMoved`.
  const serviceMoves = serviceMovesFromPlan(plan);
  const serviceCidrRange = { kubeconfig, ...ranges.service };
  const dns = { namespace: plan.dns.namespace, name: plan.dns.name };
  const rewrite = config.services.strategy === "etcd-rewrite";
  let services: pulumi.Resource;
  let servicesMoved: pulumi.Resource;
  let serviceCidrOpen: ServiceCidrSwitch | undefined;
  let dnsTemporary: DnsTemporaryService | undefined;
  let rewriteStart: ControlPlaneStart | undefined;
  if (!rewrite) {
    // 3. control plane: KCM before the apiserver, one node at a time (KCM keeps allocation off until the nodes moved),
    //    then the apiserver serving certificates with the new first Service IP.
    const controlPlane = order.declare("control-plane", stepsUnder("control-plane/", isCertStep), [snapshot], (o) => new ControlPlane("control-plane", {
      ...nodeAccess,
      serviceCidr: config.serviceCidr,
      podCidr: config.podCidr,
      ...(config.secondFamily ? { secondFamily: config.secondFamily } : {}),
    }, o));
    const certs = order.declare("apiserver-certs", stepsUnder("control-plane/").filter(isCertStep), [controlPlane], (o) => new ApiserverCerts("apiserver-certs", {
      ...nodeAccess,
      serviceCidr: config.serviceCidr,
      clusterConfiguration: liveConfigMapKey(KUBEADM_CONFIG),
    }, o));

    // 4. Services: every planned move, journaled; the kubernetes Service re-created by the apiserver at the new first IP.
    //    On the ServiceCIDR API (1.33+) a ServiceCIDR for the new range opens first and the old default is retired.
    serviceCidrOpen = inventory.serviceCidrs
      ? order.declare("service-cidr-open", [], [certs], (o) => new ServiceCidrSwitch("service-cidr-open", { ...serviceCidrRange, step: "open" }, o))
      : undefined;
    services = order.declare("services", stepsUnder(SERVICE_STEP_PREFIX), [serviceCidrOpen ?? certs], (o) => new ServiceRecreation("services", {
      kubeconfig,
      moves: serviceMoves.moves,
      kubernetesService: serviceMoves.kubernetesService,
      parallelism: config.services.parallelism,
      allowLoadBalancerRecreate: config.services.allowLoadBalancerRecreate,
      bridgeOldIps: config.services.bridgeOldIps,
      routeNewIpsFirst: config.services.routeNewIpsFirst,
      moveInPlace: config.services.moveInPlace,
      serviceWatchersBefore: preflight.serviceWatchers,
      serviceCidr: ranges.service.to,
    }, o));

    // 5. DNS, first half: a stand-in Service answers at the final DNS IP before any node switches to it.
    dnsTemporary = serviceMoves.dns
      ? order.declare("dns-temporary", [stepId.dnsTemporary], [services], (o) => new DnsTemporaryService("dns-temporary", { kubeconfig, dns, finalIP: serviceMoves.dns!.toIP }, o))
      : undefined;
    servicesMoved = dnsTemporary ?? services;
  } else {
    // 3'. etcd rewrite: the control plane stopped, etcd rewritten, the control plane started on the new flags
    ({ rewrite: services, start: rewriteStart } = declareRewriteWindow(order, {
      plan, config, nodeAccess, kubeconfig, etcdTls, runId,
      after: snapshot,
      clusterConfiguration: liveConfigMapKey(KUBEADM_CONFIG),
    }));
    servicesMoved = rewriteStart;
  }

  // The kubernetes provider checks the cluster once, when it is configured, and fails every later step if it did not
  // answer then. A re-run of an interrupted etcd rewrite starts with the apiservers stopped: its provider is
  // configured only once the control plane is back.
  const providerKubeconfig = discovery.apiWasDown
    ? pulumi.all([kubeconfig, rewriteStart!.done.stdout]).apply(([text]) => text)
    : kubeconfig;
  const cluster = new k8s.Provider("cluster", { kubeconfig: pulumi.secret(providerKubeconfig), enableServerSideApply: true });
  const kube = { provider: cluster };

  // 6. cluster config: kubeadm-config keeps the new ranges for later upgrades; kubelet-config points at the stand-in.
  const clusterConfig = order.declare("cluster-config", stepsUnder("cluster-config/"), [servicesMoved], (o) => new ClusterConfig("cluster-config", clusterConfigArgs, { ...kube, ...o }));

  // 7. CNI: the new pool before any node rolls (Calico: as IPPools, or through the Tigera operator's Installation).
  const cniSteps = (...except: string[]) => stepsUnder(`cni/${plan.cni}/`, (id) => except.includes(id));
  // flannel: Network covers the old and the new range while nodes move, and becomes the new range after them
  const flannelFinalSteps = [stepId.cni({ cni: "flannel", step: "net-conf-final" }), stepId.cni({ cni: "flannel", step: "restart-final" })];
  const oldPoolRemovalStep = stepId.cni({ cni: "calico", step: "remove-old-pool" });
  const calico = plan.cni === "calico" ? calicoPoolMove({ plan, inventory, kubeconfig, provider: cluster }) : undefined;
  if (typeof calico?.pools === "string") order.skip(cniSteps(oldPoolRemovalStep), calico.pools);
  // a dual-stack run's second family: its own pool, in the same steps (the plan lists each family's range in them)
  const otherPools = calico?.otherFamily;
  const cniChanges: pulumi.Resource[] =
    calico && (typeof calico.pools !== "string" || typeof otherPools?.pools === "function")
      ? [
        ...(typeof calico.pools !== "string" ? [order.declare("calico-pool", cniSteps(oldPoolRemovalStep), [clusterConfig], calico.pools)] : []),
        ...(typeof otherPools?.pools === "function" ? [order.declare("calico-pool-other-family", [], [clusterConfig], otherPools.pools)] : []),
      ]
      : plan.cni === "flannel"
        ? [order.declare("flannel", cniSteps(...flannelFinalSteps), [clusterConfig], (o) => new FlannelConfig("flannel", { podCidr: flannelNetworks.transition, runId, restart: !rewrite, ...flannelAt }, { ...kube, ...o }))]
        : plan.cni === "cilium"
          ? [order.declare("cilium", cniSteps(), [clusterConfig], (o) => new CiliumConfig("cilium", { podCidr: config.podCidr.to, nodeMaskSize: config.podCidr.nodeMaskSize, runId }, { ...kube, ...o }))]
          : [];

  // 8. nodes: the canary alone, control-plane nodes one at a time, workers in batches; then KCM allocation back on.
  //    While they drain, a disruption budget keeps one DNS pod answering (nodeRollout.dnsDisruptionBudget).
  const dnsBudget = dnsBudgetAroundRollout(order, { config, plan, kubeconfig, runId }, [clusterConfig, ...cniChanges]);
  const nodes = declareNodeRollout(order, stepsUnder(NODE_STEP_PREFIX, isAllocationStep), [clusterConfig, ...cniChanges, dnsBudget.open], {
    plan, config, ssh, kubeconfig, runId, workerChanges: workerAddressChanges,
    ...(controlPlaneRejoin ? {
      controlPlaneRejoin: {
        controlPlaneJoins: controlPlaneRejoin.joins,
        etcd: { endpoints: config.etcd.endpoints, caCert: etcdTls.etcdCaCert, cert: etcdTls.etcdCert, key: etcdTls.etcdKey },
      },
    } : {}),
  });
  const dnsBudgetClose = dnsBudget.close(nodes.done);
  // (after a rewrite KCM started with allocation on: no Node was left in the old range)
  const allocation = rewrite
    ? undefined
    : order.declare("enable-cidr-allocation", order.steps(isAllocationStep), nodes.done, (o) => new EnableCidrAllocation("enable-cidr-allocation", {
      ...nodeAccess,
      podCidr: config.podCidr.to,
      serviceCidr: config.serviceCidr.to,
      ...(config.secondFamily ? { secondFamily: config.secondFamily } : {}),
      nodeMaskSize: config.podCidr.nodeMaskSize,
    }, o));
  const nodesMoved = allocation ? [allocation] : nodes.done;

  // 5'. DNS, second half: no pod resolves through the old IP any more; the real DNS Service takes the final IP.
  const dnsFinal = serviceMoves.dns && dnsTemporary
    ? order.declare("dns-final", [stepId.dnsFinal], nodesMoved, (o) => new DnsFinalSwap("dns-final", { kubeconfig, dns, fromIP: serviceMoves.dns!.fromIP, toIP: serviceMoves.dns!.toIP, temporary: dnsTemporary! }, o))
    : undefined;

  // 5''. Every pod has been re-created since the Services moved: no client holds an old ClusterIP, the bridges go.
  //      (The rewrite always bridges the DNS and kubernetes Services.)
  const bridgeRemoval = config.services.bridgeOldIps || rewrite
    ? order.declare("old-ip-bridges", [], [...(dnsFinal ? [dnsFinal] : nodesMoved), services], (o) => new OldIpBridgeRemoval("old-ip-bridges", { kubeconfig, trigger: runId }, o))
    : undefined;
  const podsMoved = bridgeRemoval ? [bridgeRemoval] : dnsFinal ? [dnsFinal] : nodesMoved;

  // 5'''. ServiceCIDR API: once nothing is left in the old range, the apiserver's new default replaces the old one.
  const serviceCidrClose = serviceCidrOpen
    ? order.declare("service-cidr-close", [], [...podsMoved, services], (o) => new ServiceCidrSwitch("service-cidr-close", { ...serviceCidrRange, step: "close" }, o))
    : undefined;

  // 9. kube-proxy: clusterCIDR, then a rolling restart.
  const kubeProxy = order.declare("kube-proxy", stepsUnder("kube-proxy/"), [...(serviceCidrClose ? [serviceCidrClose] : podsMoved), ...(dnsBudgetClose ? [dnsBudgetClose] : [])], (o) =>
    new KubeProxyConfig("kube-proxy", { podCidr: ranges.pod.to, runId }, { ...kube, ...o }));

  // 10. flannel's Network becomes the new range once no Node holds an old podCIDR (its restart needs that).
  const flannelFinal = plan.cni === "flannel"
    ? order.declare("flannel-final", flannelFinalSteps, [kubeProxy], (o) => new FlannelConfig("flannel-final", { podCidr: flannelNetworks.final, runId: `${runId}-final`, ...flannelAt }, { ...kube, ...o }))
    : undefined;

  // 11. the old Calico pool goes only once no IPAM block or affinity is left in it.
  if (typeof calico?.removal === "string") order.skip([oldPoolRemovalStep], calico.removal);
  const oldPoolRemovals = [
    ...(calico && typeof calico.removal !== "string" ? [order.declare("calico-old-pool", [oldPoolRemovalStep], [kubeProxy], calico.removal)] : []),
    ...(typeof otherPools?.removal === "function" ? [order.declare("calico-old-pool-other-family", [], [kubeProxy], otherPools.removal)] : []),
  ];

  // 12. control-plane nodes' addresses (nodeAddresses): one node at a time, once everything else has moved.
  const beforeAddresses = oldPoolRemovals.length > 0 ? oldPoolRemovals : [flannelFinal ?? kubeProxy];
  const controlPlaneAddress = config.hostAddress
    ? declareControlPlaneAddress(order, beforeAddresses, {
      nodeAccess, changes: controlPlaneAddressChanges, host: config.hostAddress, kubeconfig, config, etcdTls,
      serviceSubnet: config.serviceCidr.to,
      // ApiserverCerts kept the old `kubernetes` Service IP in the certificate; so does every re-issue after it
      apiserverExtraSans: [kubernetesServiceIP(config.serviceCidr.from)],
    })
    : undefined;

  // 13. verify: nothing left in the old ranges; every Service at its planned IP; every node at its new address.
  const verify = order.declare("verify", [stepId.verify], controlPlaneAddress ? [controlPlaneAddress] : beforeAddresses, (o) => new Verification("verify", { kubeconfig, config, plan, trigger: runId }, o));
  order.check();
  discovery.finish(preflight.blockers);

  return {
    serviceCidr: plan.serviceCidr,
    podCidr: plan.podCidr,
    servicesMoving: plan.services.filter((s) => s.action === "recreate").length,
    nodesMoving: plan.nodes.filter((n) => n.action === "move").length,
    estimate: { oursSeconds: plan.estimate.oursSeconds, manualRunbookMinutes: plan.estimate.manualMinutes, nodes: nodes.estimate },
    snapshot: { path: snapshot.path, sha256: snapshot.sha256 },
    dnsGapMillis: dnsFinal?.gapMillis,
    verifyWarnings: verify.warnings,
  };
};

/** A UserError (unreachable cluster, inconsistent inventory) is a one-line RunError, not a stack trace. */
async function userErrorsAsRunErrors<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw err instanceof UserError ? new pulumi.RunError(err.message) : err;
  }
}

function userErrorsAsRunErrorsSync<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw err instanceof UserError ? new pulumi.RunError(err.message) : err;
  }
}
