// ServiceCidrSwitch: its defaults come from lib/serviceMove/serviceCidrs, one source for the resource and the steps.
import * as assert from "node:assert/strict";
import { ServiceCidrSwitch } from "../../../dynamic-providers/serviceCidrSwitch";
import { SERVICE_CIDR_SWITCH_TIMEOUT_MS } from "../../../lib/serviceMove/serviceCidrs";
import { captureGraph } from "../../support/pulumiMocks";

describe("ServiceCidrSwitch defaults: one source", () => {
  it("the declared timeout is the ServiceCIDR steps' own default, 120 s", async () => {
    assert.equal(SERVICE_CIDR_SWITCH_TIMEOUT_MS, 120_000);
    const graph = await captureGraph(() => {
      new ServiceCidrSwitch("open", { kubeconfig: "apiVersion: v1\nkind: Config\nclusters: []\n", step: "open", from: "10.96.0.0/16", to: "10.112.0.0/16" });
    });
    assert.equal(graph.named("open").inputs.timeoutSeconds, SERVICE_CIDR_SWITCH_TIMEOUT_MS / 1000);
  });
});
