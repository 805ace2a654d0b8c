/**
 * The policy pack's entry point: `pulumi preview --policy-pack policy --policy-pack-config <config.json>` runs it
 * next to the program. The policies live in policies.ts (and their rules in lib/gate/policyRules.ts) so tests can call
 * them without starting the pack's analyzer server, which constructing a PolicyPack does.
 */
import { PolicyPack } from "@pulumi/policy";
import { policies } from "./policies";

new PolicyPack("cidr-migration", {
  description: "cidr-migration invariants: the new Calico pool in the new pod range, control-plane flags equal on every node, a backup before every manifest edit",
  enforcementLevel: "mandatory",
  policies,
});
