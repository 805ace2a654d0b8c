// The host address change of a node IP move (issue 16): every form shellchecks clean, and bad input is refused at
// generation time naming the field. test/integration/nodeAddressChange.test.ts runs it in a network namespace.
import { strict as assert } from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { UserError } from "../../../lib/config/errors";
import { ADDRESS_PERSISTENCE, nodeAddressChange } from "../../../lib/remote/scripts/nodeAddressChange";

const BASE = { from: "192.168.10.21", to: "192.168.20.21", prefix: 24 } as const;

describe("nodeAddressChange script (issue 16)", () => {
  it("shellchecks clean in every persistence form, IPv4 and IPv6", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "node-address-"));
    const scripts = [
      ...ADDRESS_PERSISTENCE.map((persistence) => nodeAddressChange({ ...BASE, persistence, hookPath: "/usr/local/sbin/change-address" })),
      nodeAddressChange({ from: "fd00:1::21", to: "fd00:2::21", prefix: 64, persistence: "nmcli", interface: "eth0" }),
      nodeAddressChange({ ...BASE, persistence: "netplan", phase: "add" }),
      nodeAddressChange({ ...BASE, persistence: "netplan", phase: "remove-old" }),
    ];
    for (const [i, script] of scripts.entries()) {
      const file = path.join(dir, `${i}.sh`);
      fs.writeFileSync(file, script);
      const result = spawnSync("shellcheck", ["--severity=style", "--shell=bash", file], { encoding: "utf8" });
      assert.equal(result.status, 0, `${ADDRESS_PERSISTENCE[i] ?? ["ipv6", "add", "remove-old"][i - ADDRESS_PERSISTENCE.length]}:\n${result.stdout}${result.stderr}`);
    }
  });

  it("refuses bad input with one line naming the field", () => {
    const refused = (input: Parameters<typeof nodeAddressChange>[0], pattern: RegExp) =>
      assert.throws(() => nodeAddressChange(input), (e: Error) => e instanceof UserError && pattern.test(e.message));
    refused({ ...BASE, from: "192.168.10", persistence: "none" }, /from "192\.168\.10" is not an IP address/);
    refused({ ...BASE, to: "fd00::21", persistence: "none" }, /changes the address family/);
    refused({ ...BASE, prefix: 33, persistence: "none" }, /prefix 33 is not a prefix length of a IPv4 address/);
    refused({ ...BASE, persistence: "ifupdown" as never }, /persistence "ifupdown" is not one of netplan, nmcli, hook, none/);
    refused({ ...BASE, persistence: "hook" }, /persistence "hook" needs the path of the operator's script/);
    refused({ ...BASE, persistence: "hook", hookPath: "relative/hook" }, /hookPath "relative\/hook" is not an absolute path/);
    refused({ ...BASE, persistence: "none", interface: "eth0; reboot" }, /interface "eth0; reboot" is not a network interface name/);
    refused({ ...BASE, persistence: "none", phase: "swap" as never }, /phase "swap" is not one of both, add, remove-old/);
  });
});
