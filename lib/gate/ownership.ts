import { parseUrn } from "./urn";

/**
 * Whose resource a URN names, decided from its type chain alone (so it works for deleted resources too, whose
 * only trace in the preview is the URN):
 * - "migration": any type in the chain is one of our components (`cidr-migration:*`), so the resource is ours or
 *   a child of ours (RemoteScripts, kubernetes *Patch and IPPool objects, dynamic resources inside a component),
 *   or it is a dynamic-provider resource (`pulumi-nodejs:dynamic:Resource`, or `pulumi-nodejs:dynamic/<module>:<Type>`
 *   as ours are named, e.g. `pulumi-nodejs:dynamic/cidr-migration:ServiceRecreation`): only this program declares those;
 * - "plumbing": the root stack and provider resources (their own replacement is not a change to the cluster;
 *   what it would replace shows up as steps of the resources using them);
 * - "outside": everything else, e.g. a Service or Deployment another program in the same stack manages.
 */
export type Ownership = "migration" | "plumbing" | "outside";

export const MIGRATION_TYPE_PREFIX = "cidr-migration:";
const DYNAMIC_TYPE = /^pulumi-nodejs:dynamic(\/[^:]+)?:[^:]+$/;
export const ROOT_STACK_TYPE = "pulumi:pulumi:Stack";
const PROVIDER_TYPE_PREFIX = "pulumi:providers:";

/** A resource served by the Node.js dynamic-provider host (@pulumi/pulumi dynamic.Resource). */
export function isDynamicType(type: string): boolean {
  return DYNAMIC_TYPE.test(type);
}

export function ownershipOf(urn: string): Ownership {
  const parsed = parseUrn(urn);
  if (!parsed) return "outside";
  if (parsed.typeChain.some((t) => t.startsWith(MIGRATION_TYPE_PREFIX)) || isDynamicType(parsed.type)) return "migration";
  if (parsed.type === ROOT_STACK_TYPE || parsed.type.startsWith(PROVIDER_TYPE_PREFIX)) return "plumbing";
  return "outside";
}

/** The `cidr-migration:<module>:<Type>` components a URN sits in (outermost first), e.g. ["controlPlane"]. */
export function migrationModules(urn: string): string[] {
  return (parseUrn(urn)?.typeChain ?? []).filter((t) => t.startsWith(MIGRATION_TYPE_PREFIX)).map((t) => t.split(":")[1]);
}
