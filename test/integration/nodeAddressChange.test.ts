// The host address change of a node IP move (issue 16) on a real link: a network namespace with a veth interface
// holding the node's old address, the generated script run in it as the node would run it. netplan and nmcli are
// fakes on the PATH that keep what they are told (neither runs here); the hook is a real script.
import { strict as assert } from "assert";
import { execFileSync, spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { AddressChangePhase, AddressPersistence, nodeAddressChange } from "../../lib/remote/scripts/nodeAddressChange";

const NS = `cm-addr-${process.pid}`;
const FROM = "192.168.10.21";
const TO = "192.168.20.21";

const FAKE_NETPLAN = `#!/usr/bin/env bash
state="$FAKE_DIR/netplan-addresses"
case "$1" in
  get) [ "$2" = ethernets.eth0.addresses ] || exit 2; sed 's/^/- /' "$state" ;;
  set) value="\${2#ethernets.eth0.addresses=[}"; printf '%s\\n' "\${value%]}" | tr , '\\n' > "$state"; echo "netplan $*" >> "$FAKE_DIR/calls" ;;
  *) exit 2 ;;
esac
`;
const FAKE_NMCLI = `#!/usr/bin/env bash
case "$1 $2" in
  "-g GENERAL.CONNECTION") echo "Wired connection 1" ;;
  "connection modify") echo "nmcli $*" >> "$FAKE_DIR/calls" ;;
  *) exit 2 ;;
esac
`;

function addresses(family: "-4" | "-6" = "-4"): string[] {
  return execFileSync("ip", ["-n", NS, "-o", family, "addr", "show", "dev", "eth0", "scope", "global"], { encoding: "utf8" })
    .split("\n").filter(Boolean).map((line) => line.split(/\s+/)[3]);
}

describe("nodeAddressChange on a real link (issue 16)", function () {
  this.timeout(60_000);
  let fakes: string;

  const run = (persistence: AddressPersistence, extra: { hookPath?: string; phase?: AddressChangePhase; from?: string; to?: string; prefix?: number } = {}) => {
    const script = nodeAddressChange({ from: FROM, to: TO, prefix: 24, persistence, ...extra });
    return spawnSync("ip", ["netns", "exec", NS, "bash", "-s"], { input: script, encoding: "utf8", env: { ...process.env, PATH: `${fakes}:${process.env.PATH}`, FAKE_DIR: fakes } });
  };
  const calls = () => (fs.existsSync(path.join(fakes, "calls")) ? fs.readFileSync(path.join(fakes, "calls"), "utf8").trim().split("\n") : []);

  before(() => {
    fakes = fs.mkdtempSync(path.join(os.tmpdir(), "node-address-fakes-"));
    fs.writeFileSync(path.join(fakes, "netplan"), FAKE_NETPLAN, { mode: 0o755 });
    fs.writeFileSync(path.join(fakes, "nmcli"), FAKE_NMCLI, { mode: 0o755 });
    execFileSync("ip", ["netns", "add", NS]);
    execFileSync("ip", ["-n", NS, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0p"]);
    execFileSync("ip", ["-n", NS, "link", "set", "eth0", "up"]);
  });
  after(() => {
    spawnSync("ip", ["netns", "del", NS]);
    if (fakes) fs.rmSync(fakes, { recursive: true, force: true });
  });
  beforeEach(() => {
    spawnSync("ip", ["-n", NS, "addr", "flush", "dev", "eth0"]);
    execFileSync("ip", ["-n", NS, "addr", "add", `${FROM}/24`, "dev", "eth0"]);
    fs.rmSync(path.join(fakes, "calls"), { force: true });
  });

  it("persistence none: the live address moves; a second run changes nothing", () => {
    const first = run("none");
    assert.equal(first.status, 0, first.stderr);
    assert.deepEqual(addresses(), [`${TO}/24`]);
    assert.match(first.stdout, /set live only, a reboot brings 192\.168\.10\.21\/24 back/);
    const again = run("none");
    assert.equal(again.status, 0, again.stderr);
    assert.match(again.stdout, /already changed/);
    assert.deepEqual(addresses(), [`${TO}/24`]);
  });

  it("IPv6, in two phases: the new address beside the old, then the old one gone; each phase again is a no-op", () => {
    const [from6, to6] = ["fd00:10::21", "fd00:20::21"];
    execFileSync("ip", ["-n", NS, "addr", "add", `${from6}/64`, "dev", "eth0", "nodad"]);
    const v6 = { from: from6, to: to6, prefix: 64 };
    const added = run("none", { ...v6, phase: "add" });
    assert.equal(added.status, 0, added.stderr);
    assert.deepEqual(addresses("-6").sort(), [`${from6}/64`, `${to6}/64`].sort());
    assert.match(run("none", { ...v6, phase: "add" }).stdout, /already added/);
    const removed = run("none", { ...v6, phase: "remove-old" });
    assert.equal(removed.status, 0, removed.stderr);
    assert.deepEqual(addresses("-6"), [`${to6}/64`]);
    assert.match(run("none", { ...v6, phase: "remove-old" }).stdout, /already removed/);
    assert.deepEqual(addresses(), [`${FROM}/24`], "the IPv4 address untouched");
  });

  it("netplan: the old entry replaced in the interface's addresses, every other kept, before the live change", () => {
    fs.writeFileSync(path.join(fakes, "netplan-addresses"), `10.9.9.9/16\n${FROM}/24\n`);
    const result = run("netplan");
    assert.equal(result.status, 0, result.stderr);
    assert.deepEqual(fs.readFileSync(path.join(fakes, "netplan-addresses"), "utf8").trim().split("\n"), ["10.9.9.9/16", `${TO}/24`]);
    assert.deepEqual(addresses(), [`${TO}/24`]);
    // netplan without the old address: nothing is changed, and the message says where to look
    execFileSync("ip", ["-n", NS, "addr", "flush", "dev", "eth0"]);
    execFileSync("ip", ["-n", NS, "addr", "add", `${FROM}/24`, "dev", "eth0"]);
    fs.writeFileSync(path.join(fakes, "netplan-addresses"), "10.9.9.9/16\n");
    const refused = run("netplan");
    assert.equal(refused.status, 1);
    assert.match(refused.stderr, /netplan has no address 192\.168\.10\.21\/24 for eth0 \(it lists: 10\.9\.9\.9\/16\)/);
    assert.deepEqual(addresses(), [`${FROM}/24`], "the live address is untouched");
  });

  it("nmcli: the connection on the interface loses the old address and gains the new one", () => {
    const result = run("nmcli");
    assert.equal(result.status, 0, result.stderr);
    assert.deepEqual(calls(), [`nmcli connection modify Wired connection 1 -ipv4.addresses ${FROM}/24 +ipv4.addresses ${TO}/24`]);
    assert.deepEqual(addresses(), [`${TO}/24`]);
  });

  it("hook: the operator's script gets the addresses and the interface; when it fails, the live address stays", () => {
    const hook = path.join(fakes, "hook");
    fs.writeFileSync(hook, `#!/usr/bin/env bash\nprintf '%s %s %s %s\\n' "$OLD_IP" "$NEW_IP" "$PREFIX" "$INTERFACE" >> "$FAKE_DIR/calls"\nexit "\${HOOK_EXIT:-0}"\n`, { mode: 0o755 });
    const ok = run("hook", { hookPath: hook });
    assert.equal(ok.status, 0, ok.stderr);
    assert.deepEqual(calls(), [`${FROM} ${TO} 24 eth0`]);
    assert.deepEqual(addresses(), [`${TO}/24`]);

    execFileSync("ip", ["-n", NS, "addr", "flush", "dev", "eth0"]);
    execFileSync("ip", ["-n", NS, "addr", "add", `${FROM}/24`, "dev", "eth0"]);
    process.env.HOOK_EXIT = "3";
    try {
      const failed = run("hook", { hookPath: hook });
      assert.equal(failed.status, 1);
      assert.match(failed.stderr, /the hook .* failed \(exit 3\); the live address is unchanged/);
    } finally {
      delete process.env.HOOK_EXIT;
    }
    assert.deepEqual(addresses(), [`${FROM}/24`]);
  });

  it("in two phases for a node reached at its old address: add keeps the old one live, remove-old takes it away only once the new one is there; each phase again is a no-op", () => {
    fs.writeFileSync(path.join(fakes, "netplan-addresses"), `${FROM}/24\n`);
    const refusedEarly = run("netplan", { phase: "remove-old" });
    assert.equal(refusedEarly.status, 1);
    assert.match(refusedEarly.stderr, /192\.168\.20\.21 is on no link, so removing 192\.168\.10\.21 would leave the node unreachable/);
    assert.deepEqual(addresses(), [`${FROM}/24`]);

    const added = run("netplan", { phase: "add" });
    assert.equal(added.status, 0, added.stderr);
    assert.deepEqual(addresses().sort(), [`${FROM}/24`, `${TO}/24`].sort(), "both live: the session on the old address lives on");
    assert.deepEqual(fs.readFileSync(path.join(fakes, "netplan-addresses"), "utf8").trim().split("\n"), [`${TO}/24`], "persisted before the live change");
    const addedAgain = run("netplan", { phase: "add" });
    assert.equal(addedAgain.status, 0, addedAgain.stderr);
    assert.match(addedAgain.stdout, /already added/);
    assert.equal(calls().length, 1, "persistence is not done twice");

    const removed = run("netplan", { phase: "remove-old" });
    assert.equal(removed.status, 0, removed.stderr);
    assert.deepEqual(addresses(), [`${TO}/24`]);
    const removedAgain = run("netplan", { phase: "remove-old" });
    assert.equal(removedAgain.status, 0, removedAgain.stderr);
    assert.match(removedAgain.stdout, /already removed/);
  });

  it("a new address in the old one's subnet survives the old one's removal (a primary's secondaries are promoted, not deleted with it), in one phase or two", () => {
    const sameSubnet = "192.168.10.121";
    const promote = () => execFileSync("ip", ["netns", "exec", NS, "cat", "/proc/sys/net/ipv4/conf/eth0/promote_secondaries"], { encoding: "utf8" }).trim();
    const runTo = (phase: AddressChangePhase) => spawnSync("ip", ["netns", "exec", NS, "bash", "-s"], { input: nodeAddressChange({ from: FROM, to: sameSubnet, prefix: 24, persistence: "none", phase }), encoding: "utf8" });
    for (const phases of [["add", "remove-old"], ["both"]] as AddressChangePhase[][]) {
      spawnSync("ip", ["-n", NS, "addr", "flush", "dev", "eth0"]);
      execFileSync("ip", ["-n", NS, "addr", "add", `${FROM}/24`, "dev", "eth0"]);
      execFileSync("ip", ["netns", "exec", NS, "sh", "-c", "echo 0 > /proc/sys/net/ipv4/conf/eth0/promote_secondaries"]);
      for (const phase of phases) {
        const result = runTo(phase);
        assert.equal(result.status, 0, `${phase}: ${result.stderr}`);
      }
      assert.deepEqual(addresses(), [`${sameSubnet}/24`], `${phases.join(" then ")}: the new address stays`);
      assert.equal(promote(), "1");
    }
  });

  it("no link holding either address is refused, naming the config key", () => {
    execFileSync("ip", ["-n", NS, "addr", "flush", "dev", "eth0"]);
    const result = run("none");
    assert.equal(result.status, 1);
    assert.match(result.stderr, /no link holds 192\.168\.10\.21, and 192\.168\.20\.21 is not set either; check nodeAddresses/);
  });
});
