/**
 * Reads the output of `kubeadm token create --print-join-command` (run on a control-plane node for the
 * kubeadm-rejoin strategy) into what lib/remote/scripts/kubeadmRejoin takes.
 *
 * The output is one line, `kubeadm join <host:port> --token <token> --discovery-token-ca-cert-hash sha256:<hex>`
 * (for a control-plane node also `--control-plane --certificate-key <hex>`), possibly after warning lines. The token is a credential: it comes back as a Sensitive, and no error message
 * here quotes the output.
 */
import { UserError } from "../config/errors";
import { Sensitive } from "../config/sensitive";

export interface JoinParameters {
  endpoint: string;
  token: Sensitive;
  caCertHash: string;
  /** A control-plane join's key to the certificates kubeadm uploaded (--certificate-key): a credential too. */
  certificateKey?: Sensitive;
}

export function parseJoinCommand(output: string): JoinParameters {
  const line = output.split("\n").map((l) => l.trim()).reverse().find((l) => l.startsWith("kubeadm join "));
  if (!line) throw new UserError("the token step printed no `kubeadm join` line; run `kubeadm token create --print-join-command` on the control-plane node by hand to see why");
  const words = line.split(/\s+/);
  const endpoint = words[2];
  const valueOf = (flag: string): string | undefined => {
    const i = words.indexOf(flag);
    if (i >= 0) return words[i + 1];
    return words.find((w) => w.startsWith(`${flag}=`))?.slice(flag.length + 1);
  };
  const token = valueOf("--token");
  const caCertHash = valueOf("--discovery-token-ca-cert-hash");
  if (!endpoint || endpoint.startsWith("--")) throw new UserError("the `kubeadm join` line has no control-plane endpoint; check controlPlaneEndpoint in kubeadm-config");
  if (!token) throw new UserError("the `kubeadm join` line has no --token; re-run the token step");
  if (!caCertHash) throw new UserError("the `kubeadm join` line has no --discovery-token-ca-cert-hash; re-run the token step");
  const certificateKey = valueOf("--certificate-key");
  return { endpoint, token: new Sensitive(token), caCertHash, ...(certificateKey ? { certificateKey: new Sensitive(certificateKey) } : {}) };
}
