import * as assert from "assert";
import { RangeMatcher } from "../../../lib/preflight/addressLiterals";

const SERVICE = { label: "old Service range", cidr: "10.96.0.0/12" };
const POD = { label: "old Pod range", cidr: "10.244.0.0/16" };
const V6 = { label: "old Service range", cidr: "fd00:10:96::/108" };

describe("preflight address literals: RangeMatcher.scan", () => {
  const matcher = new RangeMatcher([SERVICE, POD]);
  const literals = (text: string) => matcher.scan(text).map((h) => h.literal);

  it("finds an address inside a URL with a port and a path", () => {
    const hits = matcher.scan("url: http://10.96.5.5:9090/metrics");
    assert.deepStrictEqual(hits, [{ literal: "10.96.5.5", range: SERVICE, isCidr: false, line: undefined }]);
  });

  it("tells the Service range from the Pod range", () => {
    const hits = matcher.scan("a=10.111.255.254 b=10.244.3.7");
    assert.deepStrictEqual(hits.map((h) => [h.literal, h.range.label]), [["10.111.255.254", "old Service range"], ["10.244.3.7", "old Pod range"]]);
  });

  it("ignores addresses outside the ranges and the edges just past them", () => {
    assert.deepStrictEqual(literals("192.168.1.1 10.95.255.255 10.112.0.0 10.245.0.1 10.243.255.255"), []);
  });

  it("does not read part of a longer number or dotted sequence as an address", () => {
    assert.deepStrictEqual(literals("110.96.5.5 1.10.96.5.5 10.96.5.5.1 10.96.5.5123 oid 1.3.6.10.96.0.1"), []);
  });

  it("takes the whole last octet (10.96.0.100, not 10.96.0.10)", () => {
    assert.deepStrictEqual(literals("x 10.96.0.100, y"), ["10.96.0.100"]);
  });

  it("reports 1-based line numbers in multi-line text (YAML, JSON)", () => {
    const yaml = ["scrape_configs:", "  - job_name: app", "    static_configs:", "      - targets: ['10.96.5.5:9090']", "", '{"backend": "10.244.1.9"}'].join("\n");
    assert.deepStrictEqual(matcher.scan(yaml).map((h) => [h.literal, h.line]), [["10.96.5.5", 4], ["10.244.1.9", 6]]);
  });

  it("reads a network-form CIDR as a range that overlaps, and host bits as an interface address", () => {
    const hits = matcher.scan("allow 10.244.0.0/16 and 10.0.0.0/8; iface 10.244.1.5/24; other 172.16.0.0/12");
    assert.deepStrictEqual(hits.map((h) => [h.literal, h.isCidr]), [["10.244.0.0/16", true], ["10.0.0.0/8", true], ["10.244.1.5/24", false]]);
  });

  it("finds IPv6 literals, bracketed in URLs, and rejects hex-and-colon text that is no address", () => {
    const v6 = new RangeMatcher([V6]);
    const hits = v6.scan("dns http://[fd00:10:96::a]:53 at 12:30:45, mac de:ad:be:ef:00:01, out fd00:10:97::1, net fd00:10:96::/112");
    assert.deepStrictEqual(hits.map((h) => [h.literal, h.isCidr]), [["fd00:10:96::a", false], ["fd00:10:96::/112", true]]);
  });

  it("does not scan for a family none of the ranges has", () => {
    assert.deepStrictEqual(new RangeMatcher([V6]).scan("10.96.0.1"), []);
    assert.deepStrictEqual(matcher.scan("fd00:10:96::a"), []);
  });

  it("rangeOfAddress answers for one exact address only", () => {
    assert.strictEqual(matcher.rangeOfAddress("10.96.0.10"), SERVICE);
    assert.strictEqual(matcher.rangeOfAddress("10.244.0.0/16"), undefined);
    assert.strictEqual(matcher.rangeOfAddress("10.112.0.10"), undefined);
  });
});
