import { strict as assert } from "assert";
import { execFileSync } from "child_process";
import * as path from "path";
import { opensslIpSan } from "../../../lib/remote/scripts/renewApiserverCert";
import { tempDir } from "../../support/tempDirs";

describe("opensslIpSan: an IP SAN as `openssl x509 -ext subjectAltName` prints it", () => {
  it("matches what openssl prints for a certificate it made, IPv4 and IPv6 (an IPv6 node address's SANs)", () => {
    const dir = tempDir("openssl-san");
    const ips = ["10.0.0.1", "fd00:20::21", "2001:db8:0:1::a"];
    execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=san", "-days", "1",
      "-keyout", path.join(dir, "key.pem"), "-out", path.join(dir, "cert.pem"), "-addext", `subjectAltName=${ips.map((ip) => `IP:${ip}`).join(",")}`], { stdio: "ignore" });
    const printed = execFileSync("openssl", ["x509", "-noout", "-ext", "subjectAltName", "-in", path.join(dir, "cert.pem")], { encoding: "utf8" })
      .split("\n").slice(1).join(",").split(",").map((s) => s.trim()).filter(Boolean);
    assert.deepEqual(ips.map(opensslIpSan), printed);
    assert.throws(() => opensslIpSan("fd00::zz"), /is not an IP address/);
  });
});
