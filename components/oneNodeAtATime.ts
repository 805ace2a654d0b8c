/**
 * `oneNodeAtATime(nodes, first, declare)`: declares each node's steps after the previous node's last step (the
 * first node after `first`, usually the component's withParentDependsOn). Control-plane changes go one node at a
 * time, so a failure stops with the other nodes untouched. Returns each node's steps, in order.
 */
import * as pulumi from "@pulumi/pulumi";

export type After = pulumi.Input<pulumi.Input<pulumi.Resource>[]>;

export function oneNodeAtATime<N, S>(nodes: readonly N[], first: After, declare: (node: N, after: After) => { steps: S; last: pulumi.Resource }): S[] {
  let after = first;
  return nodes.map((node) => {
    const { steps, last } = declare(node, after);
    after = [last];
    return steps;
  });
}
