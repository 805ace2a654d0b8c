/**
 * renewApiserverCert: re-issue one control-plane node's apiserver serving certificate so it carries the new
 * `kubernetes` Service IP (the first address of the new Service range) as a SAN, and restart the apiserver on it.
 *
 * Input: `{ certConfig, newServiceIp, backupDir, health, servingAddress?, droppedSans?, pkiDir?, manifestsDir?,
 * kubeadm?, timeoutSeconds?, root? }`
 * - `certConfig`: lib/controlPlane/kubeadmCertConfig input without certificatesDir (the cluster's own ClusterConfiguration,
 *   the new serviceSubnet, this node's name and advertise address, extra SANs such as the old Service IP).
 * - `health`: the apiserver health check after the restart (waitComponentHealthy input without `root`).
 * - `servingAddress`: where the apiserver serves TLS on this node (default 127.0.0.1:6443), to check the
 *   certificate it actually serves after the restart.
 * - `droppedSans`: SANs of the old certificate allowed to be missing from the new one (default none), in
 *   openssl's text form ("IP Address:10.96.0.1", "DNS:old.example").
 *
 * Steps (each idempotent, so a re-run after any failure is safe):
 * 1. Issue, unless apiserver.crt already has the new IP: copy apiserver.crt/key to `<backupDir>/apiserver-cert/
 *    previous/` (first copy kept forever), write the generated config, run `kubeadm init phase certs apiserver
 *    --config <file>` into a staging directory beside the backup that holds only the CA (kubeadm would reuse an
 *    existing certificate; the CA key's copy is removed as soon as kubeadm is done). Then check with openssl: the
 *    new IP is a SAN (`openssl x509 -noout -ext subjectAltName`), every old SAN is still there (minus droppedSans),
 *    the certificate verifies against ca.crt and matches its key; only then rename the pair into place, so the
 *    files the apiserver watches are never missing. Any failure leaves the previous pair in place and exits 1.
 * 2. Wait up to `reloadWaitSeconds` (default 70) for the apiserver to serve the new certificate by itself: it
 *    watches its --tls-cert-file and --tls-private-key-file and reloads them when they change (and once a minute),
 *    so it needs no restart and the API stays up. Only if it does not: as kubeadm's certificate docs say for static
 *    pods, move kube-apiserver.yaml out of the manifests directory, wait until no kube-apiserver process is left,
 *    move it back (atomically, with a trap so an error never leaves it out), then wait until the apiserver is
 *    healthy with its flags and serves the new certificate.
 */
import { Address6 } from "ip-address";
import { isIpAddress, normalizeIp } from "../../net/cidr";
import { UserError } from "../../config/errors";
import { KubeadmCertConfigInput, kubeadmCertConfig } from "../../controlPlane/kubeadmCertConfig";
import { SandboxRoot, buildScript, hostPath, sh } from "../remoteScript";
import { matching, nodePath, notInside, positiveInteger } from "./inputs";
import { embedScript } from "./embedScript";
import { backupOnce, pidsOf, replaceFile, sansOf } from "./shellFunctions";
import { WaitComponentHealthyInput, waitComponentHealthy } from "./waitComponentHealthy";

export interface RenewApiserverCertInput extends SandboxRoot {
  certConfig: Omit<KubeadmCertConfigInput, "certificatesDir">;
  newServiceIp: string;
  backupDir: string;
  health: Omit<WaitComponentHealthyInput, "root" | "component">;
  servingAddress?: string;
  droppedSans?: readonly string[];
  pkiDir?: string;
  manifestsDir?: string;
  /** The kubeadm executable (default "kubeadm" on PATH). */
  kubeadm?: string;
  /** How long to wait for the old apiserver process to exit and for the new certificate to be served (default 120). */
  timeoutSeconds?: number;
  /** How long the apiserver has to reload the new certificate itself before it is restarted (default 70: its resync is a minute). */
  reloadWaitSeconds?: number;
}

/** How `openssl x509 -ext subjectAltName` prints an IP SAN: IPv6 uncompressed, upper-case, no leading zeros. */
export function opensslIpSan(ip: string): string {
  if (!isIpAddress(ip)) throw new UserError(`"${ip}" is not an IP address`);
  const normalized = normalizeIp(ip);
  if (!normalized.includes(":")) return `IP Address:${normalized}`;
  const groups = new Address6(normalized).canonicalForm().split(":").map((g) => g.replace(/^0+(?=.)/, "").toUpperCase());
  return `IP Address:${groups.join(":")}`;
}

export function renewApiserverCert(input: RenewApiserverCertInput): string {
  const root = input.root ?? "";
  const backupDir = nodePath(input.backupDir, "backupDir");
  const pkiDir = nodePath(input.pkiDir ?? "/etc/kubernetes/pki", "pkiDir");
  const manifestsDir = nodePath(input.manifestsDir ?? "/etc/kubernetes/manifests", "manifestsDir");
  notInside(backupDir, "backupDir", manifestsDir, "manifestsDir");
  notInside(backupDir, "backupDir", pkiDir, "pkiDir");
  const newIpSan = opensslIpSan(input.newServiceIp);
  const servingAddress = matching(input.servingAddress ?? "127.0.0.1:6443", /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):[0-9]{1,5}$/, "servingAddress", "host:port such as 127.0.0.1:6443");
  const kubeadm = matching(input.kubeadm ?? "kubeadm", /^[A-Za-z0-9_./-]+$/, "kubeadm", "an executable name or path");
  const timeout = positiveInteger(input.timeoutSeconds ?? 120, "timeoutSeconds");
  const reloadWait = positiveInteger(input.reloadWaitSeconds ?? 70, "reloadWaitSeconds");
  const dropped = [...(input.droppedSans ?? [])].map((san, i) => matching(san, /^(DNS|IP Address):[^\s,]+$/, `droppedSans[${i}]`, 'a SAN such as "IP Address:10.96.0.1"'));
  const work = `${backupDir}/apiserver-cert`;
  const config = kubeadmCertConfig({ ...input.certConfig, certificatesDir: `${root.replace(/\/+$/, "")}${work}/staging` });
  const wait = waitComponentHealthy({ ...input.health, component: "kube-apiserver", root: input.root });

  return buildScript({ name: "renew-apiserver-cert", root: input.root }, [
    backupOnce,
    pidsOf,
    replaceFile,
    sansOf,
    sh`
      export LC_ALL=C
      readonly PKI=${hostPath(pkiDir)}
      readonly CRT="$PKI/apiserver.crt"
      readonly KEY="$PKI/apiserver.key"
      readonly WORK=${hostPath(work)}
      readonly PREVIOUS="$WORK/previous"
      readonly STAGING="$WORK/staging"
      readonly CONFIG="$WORK/kubeadm-certs-config.yaml"
      readonly MANIFEST=${hostPath(`${manifestsDir}/kube-apiserver.yaml`)}
      readonly PARKED="$WORK/kube-apiserver.yaml.parked"
      readonly PROC=${hostPath("/proc")}
      readonly NEW_IP_SAN=${newIpSan}
      readonly DROPPED_SANS=(${dropped})
      readonly SERVING=${servingAddress}
      readonly KUBEADM=${kubeadm}
      readonly TIMEOUT=${timeout}
      readonly RELOAD_WAIT=${reloadWait}
      readonly CONFIG_TEXT=${config}
      ${embedScript("WAIT_SCRIPT", wait)}

      served_sans() {
        { openssl s_client -connect "$SERVING" -servername kubernetes < /dev/null 2> /dev/null || true; } \
          | { openssl x509 -noout -ext subjectAltName 2> /dev/null || true; } \
          | sed -n '2,$p' | tr ',' '\n' | sed -e 's/^[[:space:]]*//' -e '/^$/d' | sort -u
      }
      apiserver_running() { [ -n "$(pids_of kube-apiserver)" ]; }
      # Filters stdin, dropping the SANs the caller allowed to go (grep -f with no pattern would drop everything).
      without_dropped() {
        if [ "\${#DROPPED_SANS[@]}" -eq 0 ]; then cat; else grep -vxF -f <(printf '%s\n' "\${DROPPED_SANS[@]}") || true; fi
      }
      reject() {
        rm -f -- "$STAGING/ca.key"
        [ -f "$STAGING/apiserver.crt" ] && cp -p -- "$STAGING/apiserver.crt" "$WORK/rejected-apiserver.crt"
        die "$1; the previous certificate stays in place (the rejected one is kept as $WORK/rejected-apiserver.crt)"
      }
      unpark() {
        if [ -f "$PARKED" ] && [ ! -e "$MANIFEST" ]; then
          replace_file "$PARKED" "$MANIFEST" "$PARKED"
          rm -f -- "$PARKED"
          note "moved $MANIFEST back"
        fi
      }

      if [ ! -f "$CRT" ] || [ ! -f "$KEY" ]; then die "$CRT or $KEY is missing; is this a kubeadm control-plane node (pkiDir)?"; fi
      [ -f "$PKI/ca.crt" ] || die "$PKI/ca.crt is missing; kubeadm needs the cluster CA to sign the new certificate"
      mkdir -p -- "$WORK"
      chmod 700 -- "$WORK"
      # A run interrupted while the manifest was parked: put it back before anything else.
      unpark

      if sans_of "$CRT" | grep -qxF -- "$NEW_IP_SAN"; then
        note "$CRT already carries $NEW_IP_SAN; not re-issuing"
      else
        backup_once "$CRT" "$PREVIOUS/apiserver.crt"
        backup_once "$KEY" "$PREVIOUS/apiserver.key"
        rm -rf -- "$STAGING"
        (umask 077 && mkdir -p -- "$STAGING" && cp -- "$PKI/ca.crt" "$PKI/ca.key" "$STAGING/")
        (umask 077 && printf '%s' "$CONFIG_TEXT" > "$CONFIG")
        "$KUBEADM" init phase certs apiserver --config "$CONFIG" || reject "kubeadm init phase certs apiserver failed"
        rm -f -- "$STAGING/ca.key"
        NEW_CRT="$STAGING/apiserver.crt"
        NEW_KEY="$STAGING/apiserver.key"
        if [ ! -f "$NEW_CRT" ] || [ ! -f "$NEW_KEY" ]; then reject "kubeadm did not write apiserver.crt and apiserver.key"; fi
        sans_of "$NEW_CRT" | grep -qxF -- "$NEW_IP_SAN" || reject "the new certificate lacks $NEW_IP_SAN (it has: $(sans_of "$NEW_CRT" | paste -sd ' ' -))"
        missing=$(comm -23 <(sans_of "$PREVIOUS/apiserver.crt") <(sans_of "$NEW_CRT") | without_dropped | paste -sd ' ' -)
        [ -z "$missing" ] || reject "the new certificate lost SANs the old one had: $missing"
        openssl verify -CAfile "$PKI/ca.crt" "$NEW_CRT" > /dev/null || reject "the new certificate does not verify against $PKI/ca.crt"
        [ "$(openssl x509 -noout -pubkey -in "$NEW_CRT" | sha256sum)" = "$(openssl pkey -pubout -in "$NEW_KEY" | sha256sum)" ] || reject "the new certificate does not match its key"
        # renamed into place with the old files' owner and mode: the apiserver's watch sees them replaced, never gone
        replace_file "$NEW_KEY" "$KEY" "$KEY"
        replace_file "$NEW_CRT" "$CRT" "$CRT"
        rm -rf -- "$STAGING"
        note "issued $CRT with $NEW_IP_SAN (previous pair kept in $PREVIOUS)"
      fi

      if served_sans | grep -qxF -- "$NEW_IP_SAN"; then
        note "the apiserver on $SERVING already serves the new certificate; no restart needed"
        exit 0
      fi
      deadline=$((SECONDS + RELOAD_WAIT))
      while [ "$SECONDS" -lt "$deadline" ]; do
        sleep 1
        if served_sans | grep -qxF -- "$NEW_IP_SAN"; then
          note "the apiserver on $SERVING reloaded the new certificate itself; no restart needed"
          exit 0
        fi
      done
      note "the apiserver on $SERVING did not reload the new certificate within \${RELOAD_WAIT}s; restarting it"
      [ -f "$MANIFEST" ] || die "$MANIFEST is missing; cannot restart the apiserver"
      trap unpark EXIT
      mv -- "$MANIFEST" "$PARKED"
      note "moved $MANIFEST out; waiting for the kubelet to stop the apiserver"
      deadline=$((SECONDS + TIMEOUT))
      while apiserver_running; do
        [ "$SECONDS" -lt "$deadline" ] || die "kube-apiserver still runs \${TIMEOUT}s after its manifest was moved out; the manifest is moved back"
        sleep 1
      done
      unpark
      trap - EXIT
      bash -c "$WAIT_SCRIPT" wait-component-healthy || die "kube-apiserver did not come back healthy after the restart; check crictl ps -a and its logs"
      deadline=$((SECONDS + TIMEOUT))
      until served_sans | grep -qxF -- "$NEW_IP_SAN"; do
        [ "$SECONDS" -lt "$deadline" ] || die "kube-apiserver on $SERVING still serves a certificate without $NEW_IP_SAN after \${TIMEOUT}s; check its --tls-cert-file"
        sleep 1
      done
      note "kube-apiserver restarted and serves $NEW_IP_SAN"
    `,
  ]);
}
