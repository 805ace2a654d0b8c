import { homedir } from "os";

/** Expands a leading `~` as a shell would, so stack files can say ~/.kube/config on any machine. */
export function expandHome(p: string): string {
  return p.replace(/^~(?=$|\/)/, homedir());
}
