/**
 * The pack's policies: thin adapters from what @pulumi/policy passes (ResourceValidationArgs, StackValidationArgs
 * with PolicyResource objects) to the pure rules in lib/gate/policyRules.ts.
 *
 * - calico-pool-in-new-pod-range (resource): an enabled crd.projectcalico.org/v1 IPPool lies inside the new pod
 *   range, given as the policy config `podCidr` (the stack's cidr-migration:podCidr.to).
 * - control-plane-flags-agree (stack): within one ControlPlane / EnableCidrAllocation, every control-plane node's
 *   manifest write sets the same flags, and KCM's --service-cluster-ip-range equals the apiserver's.
 * - manifest-edit-after-backup (stack): every remote command that writes a static-pod manifest waits, through the
 *   dependency graph (dependencies and propertyDependencies), for a backup-control-plane step on the same node.
 * All three are mandatory: a violation stops `pulumi preview` and `pulumi up`.
 */
import { PolicyResource, ReportViolation, ResourceValidationArgs, ResourceValidationPolicy, StackValidationArgs, StackValidationPolicy } from "@pulumi/policy";
import { UNKNOWN_VALUE } from "../lib/gate/unknownValue";
import { REMOTE_SCRIPT_TYPE, RemoteCommandView, connectionNode, editsWithoutBackup, flagDisagreements, ipPoolProblems } from "../lib/gate/policyRules";

export const IPPOOL_TYPE = "kubernetes:crd.projectcalico.org/v1:IPPool";

/** @pulumi/policy's proxy throws UnknownValueError when a policy reads a value not known at preview time. */
function isUnknownValueError(err: unknown): boolean {
  return err instanceof Error && err.constructor.name === "UnknownValueError";
}

/**
 * The resource's properties as plain JSON, each value preview cannot know replaced by UNKNOWN_VALUE. @pulumi/policy
 * wraps props in a proxy that throws on reading an unknown value, which would turn the whole policy into an
 * advisory "can't run during preview"; the rules instead decide per value (a write whose script is unknown but
 * whose triggers are known is still checked, and an unknown that matters fails closed).
 */
export function plainProps(value: unknown): unknown {
  if (typeof value !== "object" || value === null) return value;
  const read = (key: string | number): unknown => {
    try {
      return plainProps((value as Record<string | number, unknown>)[key]);
    } catch (err) {
      if (isUnknownValueError(err)) return UNKNOWN_VALUE;
      throw err;
    }
  };
  if (Array.isArray(value)) return Array.from({ length: value.length }, (_, i) => read(i));
  return Object.fromEntries(Object.keys(value).map((key) => [key, read(key)]));
}

function dependencyUrns(resource: PolicyResource): string[] {
  const deps = [...(resource.dependencies ?? []), ...Object.values(resource.propertyDependencies ?? {}).flat()];
  return [...new Set(deps.map((d) => d.urn))];
}

export function remoteCommandView(resource: PolicyResource): RemoteCommandView {
  const props = plainProps(resource.props) as Record<string, unknown>;
  return {
    urn: resource.urn,
    name: resource.name,
    parent: resource.parent?.urn ?? resource.opts?.parent,
    node: connectionNode(props.connection),
    script: props.script,
    triggers: props.triggers,
    dependencies: dependencyUrns(resource),
  };
}

const remoteCommands = (args: StackValidationArgs) => args.resources.filter((r) => r.type === REMOTE_SCRIPT_TYPE).map(remoteCommandView);

export const calicoPoolInNewPodRange: ResourceValidationPolicy = {
  name: "calico-pool-in-new-pod-range",
  description: "An enabled Calico IPPool lies inside the new pod range (policy config podCidr), with a block size that fits it.",
  enforcementLevel: "mandatory",
  configSchema: {
    properties: {
      podCidr: { type: "string", description: "The new pod range, the stack's cidr-migration:podCidr.to, e.g. 10.48.0.0/16; a dual-stack pair comma-separated, e.g. 10.48.0.0/16,fd00:10:48::/56." },
    },
  },
  validateResource: (args: ResourceValidationArgs, reportViolation: ReportViolation) => {
    if (args.type !== IPPOOL_TYPE) return;
    const { podCidr } = args.getConfig<{ podCidr?: string }>();
    const props = plainProps(args.props) as { metadata?: { name?: unknown }; spec?: unknown };
    const name = typeof props.metadata?.name === "string" && props.metadata.name !== UNKNOWN_VALUE ? props.metadata.name : args.name;
    for (const problem of ipPoolProblems(name, props.spec, podCidr)) reportViolation(problem);
  },
};

export const controlPlaneFlagsAgree: StackValidationPolicy = {
  name: "control-plane-flags-agree",
  description: "Every control-plane node's static-pod manifest gets the same flags, and kube-controller-manager's --service-cluster-ip-range equals kube-apiserver's.",
  enforcementLevel: "mandatory",
  validateStack: (args: StackValidationArgs, reportViolation: ReportViolation) => {
    for (const { message, urn } of flagDisagreements(remoteCommands(args))) reportViolation(message, urn);
  },
};

export const manifestEditAfterBackup: StackValidationPolicy = {
  name: "manifest-edit-after-backup",
  description: "No remote command writes a static-pod manifest unless it waits for a backup-control-plane step on the same node.",
  enforcementLevel: "mandatory",
  validateStack: (args: StackValidationArgs, reportViolation: ReportViolation) => {
    const byUrn = new Map(args.resources.map((r) => [r.urn, r]));
    const dependenciesOf = (urn: string) => {
      const resource = byUrn.get(urn);
      return resource ? dependencyUrns(resource) : [];
    };
    for (const { message, urn } of editsWithoutBackup(remoteCommands(args), dependenciesOf)) reportViolation(message, urn);
  },
};

export const policies = [calicoPoolInNewPodRange, controlPlaneFlagsAgree, manifestEditAfterBackup];
