/**
 * A Pulumi URN, `urn:pulumi:<stack>::<project>::<qualified type>::<name>`, taken apart.
 *
 * The qualified type is the resource's type prefixed by its ancestors' types, joined by `$`
 * (`cidr-migration:controlPlane:ControlPlane$pulumi-nodejs:dynamic/cidr-migration:RemoteScript`); the root stack is never part of it.
 * The name is everything after the third `::` (a name may itself contain `::`).
 */
export interface ParsedUrn {
  stack: string;
  project: string;
  /** Ancestors first, the resource's own type last. */
  typeChain: string[];
  type: string;
  name: string;
}

const PREFIX = "urn:pulumi:";

export function parseUrn(urn: string): ParsedUrn | undefined {
  if (!urn.startsWith(PREFIX)) return undefined;
  const parts = urn.slice(PREFIX.length).split("::");
  if (parts.length < 4) return undefined;
  const [stack, project, qualifiedType, ...nameParts] = parts;
  const typeChain = qualifiedType.split("$");
  return { stack, project, typeChain, type: typeChain[typeChain.length - 1], name: nameParts.join("::") };
}
