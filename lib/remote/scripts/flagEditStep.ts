/**
 * flagEditStep: the script for one control-plane flag change, computed from the manifest as read from the node:
 * lib/controlPlane/manifestFlags edits the flags (YAML-aware, everything else byte-identical), and lib/remote/scripts/
 * guardedManifestEdit writes it, waits for the component to be healthy with exactly these flags, and restores the
 * previous manifest if it is not (the restore is then checked against the flags' previous values).
 *
 * Input: `{ path, component, currentContent, flags, healthUrl, timeoutSeconds, backupDir, root? }`.
 * Output: `{ script, changes, newContent }`; `changes` lists each flag's before/after (for the preview summary).
 * With several containers in the Pod, the one named like the component is edited (kubeadm's naming).
 */
import { UserError } from "../../config/errors";
import { FlagChange, FlagValue, ManifestFlagError, containerFor, expectedFlags, setFlags } from "../../controlPlane/manifestFlags";
import { SandboxRoot } from "../remoteScript";
import { guardedManifestEdit } from "./guardedManifestEdit";
import { ControlPlaneComponent } from "./waitComponentHealthy";

export interface FlagEditStepInput extends SandboxRoot {
  path: string;
  component: ControlPlaneComponent;
  currentContent: string;
  /** null removes the flag */
  flags: Record<string, FlagValue | null>;
  healthUrl: string;
  timeoutSeconds: number;
  backupDir: string;
}

export interface FlagEditStep {
  script: string;
  changes: FlagChange[];
  newContent: string;
}

export function flagEditStep(input: FlagEditStepInput): FlagEditStep {
  let edit;
  try {
    edit = setFlags(input.currentContent, input.flags, { source: input.path, container: containerFor(input.currentContent, input.component) });
  } catch (error) {
    if (error instanceof ManifestFlagError) throw new UserError(error.message);
    throw error;
  }
  const expect = expectedFlags(edit.changes);
  const restoreExpect = edit.changes.filter((c) => c.before !== undefined && c.before !== c.after).map((c) => `--${c.flag}=${c.before}`);
  const wait = { component: input.component, url: input.healthUrl, expectFlags: expect, timeoutSeconds: input.timeoutSeconds };
  const script = guardedManifestEdit({
    path: input.path,
    currentContent: input.currentContent,
    newContent: edit.text,
    backupDir: input.backupDir,
    wait,
    restoreWait: restoreExpect.length > 0 ? { ...wait, expectFlags: restoreExpect } : undefined,
    root: input.root,
  });
  return { script, changes: edit.changes, newContent: edit.text };
}
