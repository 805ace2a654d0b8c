import { strict as assert } from "assert";
import * as fs from "fs";
import * as path from "path";
import { parse } from "yaml";
import { SANDBOX_ETCD_PORT } from "../../testbed/sandbox";

describe("Pulumi.sandbox.yaml", () => {
  it("names the etcd client port the sandbox listens on, so `pulumi up` on the sandbox stack reaches etcd", () => {
    const stackFile = parse(fs.readFileSync(path.join(__dirname, "..", "..", "..", "Pulumi.sandbox.yaml"), "utf8"));
    assert.deepEqual(stackFile.config["cidr-migration:etcd"].endpoints, [`http://127.0.0.1:${SANDBOX_ETCD_PORT}`]);
  });
});
