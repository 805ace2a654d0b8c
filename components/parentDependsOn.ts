/**
 * `withParentDependsOn(opts, own)`: the dependsOn for a component's first children: the component's own
 * `opts.dependsOn` plus `own`. The SDK does not copy a component's dependsOn onto its children (the engine would
 * only order them through the parent's registration), so the components pass it on explicitly: the engine then
 * sees e.g. "backup on cp-1 after the etcd snapshot" as a real edge (preview, --target and destroy order use it).
 */
import * as pulumi from "@pulumi/pulumi";

type DependsOn = pulumi.Input<pulumi.Input<pulumi.Resource>[]> | pulumi.Input<pulumi.Resource>;

export function withParentDependsOn(opts: pulumi.ComponentResourceOptions | undefined, own: pulumi.Resource[] = []): pulumi.Input<pulumi.Input<pulumi.Resource>[]> {
  const parent: DependsOn | undefined = opts?.dependsOn;
  if (parent === undefined) return own;
  if (Array.isArray(parent)) return [...parent, ...own];
  if (pulumi.Resource.isInstance(parent)) return [parent, ...own];
  return pulumi.output(parent as pulumi.Input<pulumi.Resource | pulumi.Resource[]>).apply((resolved) => [...(Array.isArray(resolved) ? resolved : [resolved]), ...own]);
}
