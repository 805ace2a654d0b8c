import { UserError } from "../config/errors";
import { normalizeCidr } from "../net/cidr";

/**
 * The new pod range as a CNI or kube-proxy config edit takes it: a CIDR in normal form. Anything else is a UserError
 * naming the field (`what`) in `source`, so the edit never writes a range the components would read differently.
 */
export function newPodRange(value: string, source: string, what: string): string {
  let cidr: string;
  try {
    cidr = normalizeCidr(value);
  } catch (error) {
    throw new UserError(`${source}: ${what} "${value}" is not a CIDR (${(error as Error).message}); pass the new pod range`);
  }
  if (cidr !== value) throw new UserError(`${source}: ${what} "${value}" is not in normal form; pass "${cidr}"`);
  return cidr;
}
