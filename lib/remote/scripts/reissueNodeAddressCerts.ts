/**
 * reissueNodeAddressCerts: a control-plane node's certificates re-issued for its new address (issue 16), through
 * kubeadm's own phases, so every SAN kubeadm derives (node name, Service IP, controlPlaneEndpoint, certSANs) stays:
 * the apiserver serving certificate, and with stacked etcd, etcd's server and peer certificates.
 *
 * Input: `{ certConfig, from, to, keepOld, backupDir, pkiDir?, kubeadm?, root? }`
 * - `certConfig`: lib/controlPlane/kubeadmCertConfig input without certificatesDir: the cluster's own
 *   ClusterConfiguration, its current serviceSubnet, this node's name; advertiseAddress is set to `to` here.
 * - `keepOld`: the old address stays a SAN as well. Used while the node still answers there: the apiserver and etcd
 *   reload their certificate files as they change, so a certificate without the old address would fail every
 *   client and peer still dialling it. Once nothing does, a run with `keepOld: false` drops it.
 *
 * Per certificate (apiserver, etcd/server, etcd/peer), each step idempotent so a re-run after any failure is safe:
 * 1. Left alone when its SANs already are what is asked (`to` there, and `from` there or not as `keepOld` says).
 * 2. Else the pair is copied to `<backupDir>/node-address-certs/previous/` (the first copy kept for ever) and
 *    removed (kubeadm reuses an existing pair), and kubeadm's phase writes a new one.
 * 3. Checked with openssl: the SANs asked for, every other SAN of the previous certificate kept, verified against
 *    its CA (ca.crt, etcd/ca.crt), matching its key.
 * Any failure puts every pair this run replaced back (all or nothing: etcd's server and peer certificates, and the
 * apiserver's, must agree on the node's address) and exits 1, keeping the rejected ones beside the backup.
 * With no stacked etcd (no etcd/ca.crt), only the apiserver's is re-issued, and the script says so.
 */
import { familyOf, isIpAddress, normalizeIp } from "../../net/cidr";
import { UserError } from "../../config/errors";
import { KubeadmCertConfigInput, kubeadmCertConfig } from "../../controlPlane/kubeadmCertConfig";
import { SandboxRoot, buildScript, hostPath, sh } from "../remoteScript";
import { matching, nodePath, notInside } from "./inputs";
import { opensslIpSan } from "./renewApiserverCert";
import { backupOnce, sansOf } from "./shellFunctions";

export interface ReissueNodeAddressCertsInput extends SandboxRoot {
  certConfig: Omit<KubeadmCertConfigInput, "certificatesDir" | "advertiseAddress" | "extraSans" | "etcdExtraSans">;
  from: string;
  to: string;
  keepOld: boolean;
  /** More apiserver SANs to keep (a run that also moves the Service range keeps the old `kubernetes` Service IP). */
  apiserverExtraSans?: readonly string[];
  backupDir: string;
  pkiDir?: string;
  /** The kubeadm executable (default "kubeadm" on PATH). */
  kubeadm?: string;
}

export function reissueNodeAddressCerts(input: ReissueNodeAddressCertsInput): string {
  for (const field of ["from", "to"] as const) {
    if (!isIpAddress(input[field])) throw new UserError(`nodeAddresses: ${field} "${input[field]}" is not an IP address`);
  }
  if (familyOf(input.from) !== familyOf(input.to)) throw new UserError(`nodeAddresses: ${input.from} → ${input.to} changes the address family; a node keeps its family`);
  const root = input.root ?? "";
  const backupDir = nodePath(input.backupDir, "backupDir");
  const pkiDir = nodePath(input.pkiDir ?? "/etc/kubernetes/pki", "pkiDir");
  notInside(backupDir, "backupDir", pkiDir, "pkiDir");
  const kubeadm = matching(input.kubeadm ?? "kubeadm", /^[A-Za-z0-9_./-]+$/, "kubeadm", "an executable name or path");
  const [from, to] = [normalizeIp(input.from), normalizeIp(input.to)];
  const keep = input.keepOld ? [from] : [];
  const config = kubeadmCertConfig({
    ...input.certConfig,
    advertiseAddress: to,
    extraSans: [...keep, ...(input.apiserverExtraSans ?? [])],
    etcdExtraSans: keep,
    certificatesDir: `${root.replace(/\/+$/, "")}${pkiDir}`,
  });

  return buildScript({ name: "reissue-node-address-certs", root: input.root }, [
    backupOnce,
    sansOf,
    sh`
      export LC_ALL=C
      readonly PKI=${hostPath(pkiDir)}
      readonly WORK=${hostPath(`${backupDir}/node-address-certs`)}
      readonly PREVIOUS="$WORK/previous"
      readonly UNDO="$WORK/undo"
      readonly CONFIG="$WORK/kubeadm-certs-config.yaml"
      readonly NEW_SAN=${opensslIpSan(to)} OLD_SAN=${opensslIpSan(from)}
      readonly KEEP_OLD=${input.keepOld ? "yes" : "no"}
      readonly KUBEADM=${kubeadm}
      readonly CONFIG_TEXT=${config}

      # "name kubeadm-phase CA" per certificate; etcd's only where etcd is stacked (kubeadm made its CA)
      certs=("apiserver apiserver ca")
      if [ -f "$PKI/etcd/ca.crt" ]; then
        certs+=("etcd/server etcd-server etcd/ca" "etcd/peer etcd-peer etcd/ca")
      else
        note "no $PKI/etcd/ca.crt: etcd is not stacked here, so only the apiserver certificate is kubeadm's to re-issue"
      fi
      for entry in "\${certs[@]}"; do
        read -r pair _ _ <<< "$entry"
        { [ -f "$PKI/$pair.crt" ] && [ -f "$PKI/$pair.key" ]; } || die "$PKI/$pair.crt or .key is missing; is this a kubeadm control-plane node (pkiDir)?"
      done

      # as_asked CERT: the new address is a SAN, and the old one is too exactly when it is kept
      as_asked() {
        sans_of "$1" | grep -qxF -- "$NEW_SAN" || return 1
        local has_old=no
        if sans_of "$1" | grep -qxF -- "$OLD_SAN"; then has_old=yes; fi
        [ "$has_old" = "$KEEP_OLD" ]
      }
      # this run's copies (UNDO) are what a failure puts back; PREVIOUS keeps the first ever, from before the move
      replaced=()
      reject() {
        local pair
        for pair in "\${replaced[@]}"; do
          mkdir -p -- "$WORK/rejected/$(dirname -- "$pair")"
          if [ -f "$PKI/$pair.crt" ]; then cp -p -- "$PKI/$pair.crt" "$WORK/rejected/$pair.crt"; fi
          cp -p -- "$UNDO/$pair.crt" "$PKI/$pair.crt"
          cp -p -- "$UNDO/$pair.key" "$PKI/$pair.key"
        done
        die "$1; every certificate this run replaced is back as it was (the rejected ones are in $WORK/rejected)"
      }

      mkdir -p -- "$WORK"
      chmod 700 -- "$WORK"
      rm -rf -- "$UNDO"
      (umask 077 && printf '%s' "$CONFIG_TEXT" > "$CONFIG")
      for entry in "\${certs[@]}"; do
        read -r pair phase ca <<< "$entry"
        if as_asked "$PKI/$pair.crt"; then
          note "$PKI/$pair.crt already has the SANs asked for; not re-issuing"
          continue
        fi
        backup_once "$PKI/$pair.crt" "$PREVIOUS/$pair.crt"
        backup_once "$PKI/$pair.key" "$PREVIOUS/$pair.key"
        mkdir -p -- "$UNDO/$(dirname -- "$pair")"
        cp -p -- "$PKI/$pair.crt" "$PKI/$pair.key" "$UNDO/$(dirname -- "$pair")/"
        replaced+=("$pair")
        rm -f -- "$PKI/$pair.crt" "$PKI/$pair.key"
        "$KUBEADM" init phase certs "$phase" --config "$CONFIG" || reject "kubeadm init phase certs $phase failed"
        { [ -f "$PKI/$pair.crt" ] && [ -f "$PKI/$pair.key" ]; } || reject "kubeadm did not write $PKI/$pair.crt and .key"
        as_asked "$PKI/$pair.crt" || reject "the new $pair certificate does not have the SANs asked for ($NEW_SAN; $OLD_SAN kept: $KEEP_OLD); it has: $(sans_of "$PKI/$pair.crt" | paste -sd ' ' -)"
        lost=$(comm -23 <(sans_of "$UNDO/$pair.crt") <(sans_of "$PKI/$pair.crt") | { grep -vxF -- "$OLD_SAN" || true; } | paste -sd ' ' -)
        [ -z "$lost" ] || reject "the new $pair certificate lost SANs the old one had: $lost"
        openssl verify -CAfile "$PKI/$ca.crt" "$PKI/$pair.crt" > /dev/null || reject "the new $pair certificate does not verify against $PKI/$ca.crt"
        [ "$(openssl x509 -noout -pubkey -in "$PKI/$pair.crt" | sha256sum)" = "$(openssl pkey -pubout -in "$PKI/$pair.key" | sha256sum)" ] || reject "the new $pair certificate does not match its key"
        note "issued $PKI/$pair.crt with $NEW_SAN$([ "$KEEP_OLD" = yes ] && echo " and $OLD_SAN")"
      done
    `,
  ]);
}
