/**
 * The Calico half of index.ts on its own: the same config, discovery, plan (with its refusals) and
 * components/calicoPoolMove, with nothing before it. The sandbox's nodes are simulated, so the whole program stops
 * at the control plane's first SSH step; this lets the real engine run the Calico path end to end there.
 */
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { PulumiFn } from "@pulumi/pulumi/automation";
import { calicoPoolMove } from "../../components/calicoPoolMove";
import { readStackConfig } from "../../components/stackConfig";
import { kubeconfigText, loadKubeConfig } from "../../lib/config/kubeClient";
import { discoverInventory } from "../../lib/plan/discovery";
import { buildPlan } from "../../lib/plan/plan";

export function calicoProgram(operatorTimeoutSeconds = 30): PulumiFn {
  return async () => {
    const firstRead = readStackConfig();
    const inventory = await discoverInventory(loadKubeConfig(firstRead.kubeconfig, "cidr-migration:kubeconfig"));
    const config = readStackConfig({ inventory });
    const plan = buildPlan(config, inventory);
    const kubeconfig = pulumi.secret(kubeconfigText(config.kubeconfig, "cidr-migration:kubeconfig"));
    const provider = new k8s.Provider("cluster", { kubeconfig, enableServerSideApply: true });
    const move = calicoPoolMove({ plan, inventory, kubeconfig, provider, operatorTimeoutSeconds });
    const pools = typeof move.pools === "string" ? undefined : move.pools({});
    const removal = typeof move.removal === "string" ? undefined : move.removal({ dependsOn: pools ? [pools] : [] });
    return {
      calicoPools: plan.calicoPools,
      steps: plan.phases.find((p) => p.name === "cni")?.steps.map((s) => `${s.id} ${s.action}: ${s.target}`),
      nothingToDo: [move.pools, move.removal].filter((m) => typeof m === "string"),
      removed: removal ? "declared" : "none",
    };
  };
}
