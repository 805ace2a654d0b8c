/**
 * startHeldManifest: starts a component that stopStaticPods held, on its new flags: the manifest as read before the
 * stop, with lib/controlPlane/manifestFlags' edit, is written into the manifests directory (never the held one as
 * it is: after an etcd rewrite the old flags would serve rewritten objects from the old ranges), the held copy is
 * removed, and the script waits until the component is healthy running exactly those flags.
 *
 * Input: `{ component, path, heldDir, heldContent, flags, healthUrl, timeoutSeconds, root? }`.
 * - `heldContent`: the manifest as read before the stop; the held copy must still be it.
 * Idempotent: once the manifest has the new content the script only waits. No restore on failure: the data in
 * etcd already needs the new flags, so the message says where the logs are and how the whole run is undone.
 */
import { UserError } from "../../config/errors";
import { FlagChange, FlagValue, ManifestFlagError, containerFor, expectedFlags, setFlags } from "../../controlPlane/manifestFlags";
import { SandboxRoot, buildScript, hostPath, sh } from "../remoteScript";
import { embedScript } from "./embedScript";
import { nodePath, notInside } from "./inputs";
import { sha256Of, writeHeldBack } from "./shellFunctions";
import { ControlPlaneComponent, waitComponentHealthy } from "./waitComponentHealthy";
import { sha256HexOf } from "./writeManifest";

export interface StartHeldManifestInput extends SandboxRoot {
  component: ControlPlaneComponent;
  /** The manifest's place in the manifests directory, e.g. /etc/kubernetes/manifests/kube-apiserver.yaml. */
  path: string;
  heldDir: string;
  heldContent: string;
  /** null removes the flag */
  flags: Record<string, FlagValue | null>;
  healthUrl: string;
  timeoutSeconds: number;
}

export interface StartHeldManifest {
  script: string;
  changes: FlagChange[];
}

export function startHeldManifest(input: StartHeldManifestInput): StartHeldManifest {
  const path = nodePath(input.path, "path");
  const heldDir = nodePath(input.heldDir, "heldDir");
  notInside(heldDir, "heldDir", path, "path");
  let edit;
  try {
    edit = setFlags(input.heldContent, input.flags, { source: path, container: containerFor(input.heldContent, input.component) });
  } catch (error) {
    if (error instanceof ManifestFlagError) throw new UserError(error.message);
    throw error;
  }
  const wait = waitComponentHealthy({
    component: input.component,
    url: input.healthUrl,
    expectFlags: expectedFlags(edit.changes),
    timeoutSeconds: input.timeoutSeconds,
    root: input.root,
  });
  const newContent = Buffer.from(edit.text);
  const script = buildScript({ name: "start-held-manifest", root: input.root }, [
    sha256Of,
    writeHeldBack,
    sh`
      readonly COMPONENT=${input.component}
      readonly MANIFEST=${hostPath(path)}
      readonly HELD=${hostPath(`${heldDir}/${path.split("/").pop()}`)}
      readonly HELD_SHA=${sha256HexOf(input.heldContent)}
      readonly NEW_SHA=${sha256HexOf(newContent)}
      readonly NEW_BASE64=${newContent.toString("base64")}
      ${embedScript("WAIT_SCRIPT", wait)}

      if [ "$(sha256_of "$MANIFEST")" = "$NEW_SHA" ]; then
        note "$MANIFEST has the new flags already"
      else
        [ ! -e "$MANIFEST" ] || die "$MANIFEST is back but is not the planned manifest: something put a manifest in place while this run held $COMPONENT; compare it with $HELD, leave the held one there and remove $MANIFEST, then re-run"
        [ -f "$HELD" ] || die "$HELD is missing: $COMPONENT's held manifest is gone; put the manifest from the run's backup there, then re-run"
        [ "$(sha256_of "$HELD")" = "$HELD_SHA" ] || die "$HELD changed since it was read before the stop; put back the manifest from the run's backup, then re-run"
        write_held_back "$HELD" "$MANIFEST" "$NEW_BASE64" "$NEW_SHA" || die "the new manifest did not decode to what was planned; nothing was started"
        note "wrote $MANIFEST with the new flags; the kubelet starts $COMPONENT"
      fi
      bash -c "$WAIT_SCRIPT" wait-component-healthy || die "$COMPONENT did not become healthy on its new flags ($MANIFEST). etcd already holds the new addresses, so the old flags cannot come back alone: read its logs (crictl ps -a; crictl logs), fix and re-run, or undo the whole run with cidr-migration restore from the snapshot and the manifests in the run's backup"
    `,
  ]);
  return { script, changes: edit.changes };
}
