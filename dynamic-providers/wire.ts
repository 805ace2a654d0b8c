/**
 * The kit every dynamic provider shares, so each provider file holds only its own step:
 * - the engine's unknown-value placeholder and the two ways to test for it (the value itself; anywhere inside);
 * - the kube client config from the kubeconfig's content, with an error that never echoes the content;
 * - secret inputs and outputs: pulumi.secret for an optional input, and additionalSecretOutputs on top of the caller's;
 * - the checks every provider's check() starts with: required non-empty strings, and failures as one error;
 * - whether an input equals what the state recorded;
 * - the types every provider is declared with: Wire<I> (what the engine hands it) and its checked inputs I and outputs O.
 * Providers are serialized by value into the state (Pulumi's closure serializer), so nothing here holds state.
 */
import * as pulumi from "@pulumi/pulumi";
import { KubeConfig } from "@kubernetes/client-node";
import { isDeepStrictEqual } from "util";
import { isUnknown } from "../lib/gate/unknownValue";

export { UNKNOWN_VALUE as UNKNOWN, containsUnknown, isUnknown } from "../lib/gate/unknownValue";

/**
 * What the engine hands a provider's check/diff/create/update for a resource whose checked inputs are I: I's
 * property names, each value not yet checked (UNKNOWN during a preview, anything a hand-edited state holds).
 * A provider turns it into I once its check passed.
 */
export type Wire<I> = { [K in keyof I]?: unknown };

/** A dynamic provider typed by its checked inputs I and its outputs O. */
export type TypedProvider<I, O> = pulumi.dynamic.ResourceProvider<Wire<I>, O>;

/** The kube client config from the kubeconfig's content (a secret input). */
export function kubeConfigFrom(content: string): KubeConfig {
  const kc = new KubeConfig();
  try {
    kc.loadFromString(content);
  } catch {
    throw new Error("kubeconfig: not a usable kubeconfig; check the cidr-migration:kubeconfig secret");
  }
  return kc;
}

/** pulumi.secret for an input that may be left out. */
export function secretIfGiven(value: pulumi.Input<string> | undefined): pulumi.Output<string> | undefined {
  return value === undefined ? undefined : pulumi.secret(value);
}

/** The caller's options with `names` added to additionalSecretOutputs, so those properties are stored only as secrets. */
export function withSecretOutputs(opts: pulumi.CustomResourceOptions | undefined, names: readonly string[]): pulumi.CustomResourceOptions {
  return { ...opts, additionalSecretOutputs: [...(opts?.additionalSecretOutputs ?? []), ...names] };
}

/** A failure for each of `keys` that is neither unknown yet (preview) nor a non-empty string. */
export function requiredStrings<I>(news: Wire<I>, keys: ReadonlyArray<keyof I & string>): pulumi.dynamic.CheckFailure[] {
  const failures: pulumi.dynamic.CheckFailure[] = [];
  for (const key of keys) {
    const value = news[key];
    if (isUnknown(value)) continue;
    if (typeof value !== "string" || value === "") failures.push({ property: key, reason: `${key} is required (a non-empty string)` });
  }
  return failures;
}

/** create/update re-check their inputs: any failure stops them, all reasons in one error. */
export function throwIfFailed(failures: readonly pulumi.dynamic.CheckFailure[]): void {
  if (failures.length > 0) throw new Error(failures.map((f) => f.reason).join("; "));
}

/**
 * Whether a new input equals what the state recorded. The state's round trip sorts object keys and drops undefined
 * ones, so comparing JSON text would see a change in every recorded object on the next run.
 */
export function sameAsRecorded(news: unknown, recorded: unknown): boolean {
  const plain = (v: unknown) => JSON.parse(JSON.stringify(v ?? null));
  return isDeepStrictEqual(plain(news), plain(recorded));
}
