import * as pulumi from "@pulumi/pulumi";

/**
 * A value computed from a read step's stdout (a manifest, the kubelet config, a join command). Under
 * `pulumi up --target`, a read step outside the targets is skipped and its stdout is undefined: the step built from
 * it then gets no value (it is skipped too; targeted alone, its check says the script is missing) instead of the
 * program failing on the absent text, which left `up --target` waiting forever.
 */
export function fromReadStep<T, R>(stdout: pulumi.Input<T>, make: (stdout: T) => pulumi.Input<R>): pulumi.Output<R> {
  // Typed as R: the undefined only ever reaches a step the engine skips, or one whose check refuses it.
  return pulumi.output(stdout).apply((value) => (value === undefined ? undefined : pulumi.output(make(value as T)))) as unknown as pulumi.Output<R>;
}
