import * as assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { inspect } from "node:util";
import * as pulumi from "@pulumi/pulumi";
import * as ts from "typescript";
import { Sensitive } from "../../../lib/config/sensitive";
import { UnreachableError, UserError } from "../../../lib/config/errors";
import { SnapshotStreamError } from "../../../lib/controlPlane/etcdSnapshotFile";
import { ManifestFlagError } from "../../../lib/controlPlane/manifestFlags";
import { CidrError } from "../../../lib/net/cidr";
import { YamlEditError } from "../../../lib/yaml/yamlCstEdit";
import { serializeDynamicProvider } from "../../support/providerHost";

/**
 * Every dynamic provider, serialized as `pulumi preview`/`up` sends it (`__provider`: the SDK's own
 * serializeFunction(() => provider, { allowSecrets: true }), as in @pulumi/pulumi/dynamic/index.js) and loaded
 * back as the engine's dynamic-provider host does (@pulumi/pulumi/cmd/dynamic-provider/index.js:
 * requireFromString(text).handler()), in a fresh Node process, so a provider that cannot load fails here and not
 * at the first node of a real `pulumi up`.
 *
 * Providers are found, not listed: every file in dynamic-providers/ but the shared kit (wire.ts) is required, and every exported object with a
 * create function is a provider. A guard reads each file's source and requires that every class extending
 * pulumi.dynamic.Resource passes one of those exported providers to super(), so a new provider cannot be left out.
 */

const REPO_ROOT = path.resolve(__dirname, "..", "..", "..");
const PROVIDER_DIR = path.join(REPO_ROOT, "dynamic-providers");
const HOST_SCRIPT = path.join(REPO_ROOT, "node_modules", "@pulumi", "pulumi", "cmd", "dynamic-provider", "index.js");
/** The host's own copy of require-from-string. */
const REQUIRE_FROM_STRING = require.resolve("require-from-string", { paths: [path.dirname(HOST_SCRIPT)] });
const METHODS = ["check", "diff", "create", "update", "delete", "read", "configure"] as const;
/**
 * What the serializer writes for a captured value whose methods need the built-in's internal slots: a plain object
 * holding copied methods (`value: global.Set.prototype.has`) or `Object.create(global.Set.prototype)`. Either throws
 * at run time ("Method Set.prototype.has called on incompatible receiver"), so no provider may carry one.
 */
const UNREBUILDABLE = /global\.(Set|Map|WeakMap|WeakSet|WeakRef|Symbol|Date|Uint8Array|Buffer)\.prototype\b/;

type Provider = pulumi.dynamic.ResourceProvider;
interface Discovered { file: string; name: string; provider: Provider }

function isProvider(value: unknown): value is Provider {
  return typeof value === "object" && value !== null && typeof (value as Provider).create === "function";
}

/** Shared helpers, not providers: named here one by one, so any other file without a provider still fails. */
const KIT_FILES = ["wire.ts"];

function providerFiles(): string[] {
  return fs.readdirSync(PROVIDER_DIR).filter((f) => /\.ts$/.test(f) && !f.endsWith(".d.ts") && !KIT_FILES.includes(f)).sort();
}

function discover(): Discovered[] {
  const found: Discovered[] = [];
  for (const file of providerFiles()) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const mod = require(path.join(PROVIDER_DIR, file)) as Record<string, unknown>;
    for (const [name, value] of Object.entries(mod)) {
      if (isProvider(value)) found.push({ file, name, provider: value });
    }
  }
  return found;
}

/** For each class in the file that extends pulumi.dynamic.Resource directly: the source text of super()'s first argument. */
function dynamicResourceSuperArgs(file: string): Array<{ className: string; arg: string }> {
  const source = ts.createSourceFile(file, fs.readFileSync(path.join(PROVIDER_DIR, file), "utf8"), ts.ScriptTarget.ES2022, true);
  const result: Array<{ className: string; arg: string }> = [];
  const visit = (node: ts.Node): void => {
    if (ts.isClassDeclaration(node) || ts.isClassExpression(node)) {
      const base = node.heritageClauses?.find((h) => h.token === ts.SyntaxKind.ExtendsKeyword)?.types[0]?.expression.getText(source);
      if (base !== undefined && /(^|\.)dynamic\.Resource$/.test(base)) {
        const className = node.name?.text ?? "(anonymous class)";
        let calls = 0;
        const findSuper = (n: ts.Node): void => {
          if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.SuperKeyword) {
            calls++;
            result.push({ className, arg: n.arguments[0]?.getText(source) ?? "" });
          }
          ts.forEachChild(n, findSuper);
        };
        node.members.filter(ts.isConstructorDeclaration).forEach(findSuper);
        if (calls === 0) result.push({ className, arg: "" });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return result;
}

let scratch: string | undefined;
function scratchDir(): string {
  scratch ??= fs.mkdtempSync(path.join(os.tmpdir(), "provider-serialization-"));
  return scratch;
}

// Runs in a fresh `node` process from the repository root, like the engine's dynamic-provider host: the serialized
// module is loaded with requireFromString and its handler() called. "methods" reports which provider methods the
// loaded object has; "value" reports what handler() returned.
const LOADER = `
const fs = require("fs");
const [requireFromStringPath, file, mode] = process.argv.slice(1);
const requireFromString = require(requireFromStringPath);
(async () => {
  try {
    const loaded = requireFromString(fs.readFileSync(file, "utf8")).handler();
    const out = mode === "methods"
      ? { methods: ${JSON.stringify(METHODS)}.filter((m) => typeof loaded[m] === "function") }
      : { value: await loaded };
    process.stdout.write(JSON.stringify(out));
  } catch (err) {
    process.stdout.write(JSON.stringify({ error: String(err && err.stack || err) }));
  }
})();
`;

function loadInFreshHost(text: string, mode: "methods" | "value"): { methods?: string[]; value?: unknown; error?: string } {
  const file = path.join(scratchDir(), `serialized-${process.hrtime.bigint()}.js`);
  fs.writeFileSync(file, text);
  const stdout = execFileSync(process.execPath, ["-e", LOADER, REQUIRE_FROM_STRING, file, mode], { cwd: REPO_ROOT, encoding: "utf8" });
  return JSON.parse(stdout) as { methods?: string[]; value?: unknown; error?: string };
}

const PROVIDERS = discover();

const serializedText = new Map<Provider, Promise<string>>();
function serialized(provider: Provider): Promise<string> {
  if (!serializedText.has(provider)) serializedText.set(provider, serializeDynamicProvider(provider));
  return serializedText.get(provider) as Promise<string>;
}

after(() => {
  if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
  scratch = undefined;
});

describe("dynamic providers: serialized as __provider and loaded by the provider host", function () {
  this.timeout(120_000);

  it("finds at least one exported provider in every file of dynamic-providers/", () => {
    const files = providerFiles();
    assert.ok(files.length > 0, "dynamic-providers/ has no files");
    for (const file of files) {
      assert.ok(PROVIDERS.some((p) => p.file === file), `${file} exports no provider object (export the object it passes to super())`);
    }
  });

  it("every dynamic.Resource passes an exported provider to super(), so none escapes this test", () => {
    for (const file of providerFiles()) {
      const exported = new Map(PROVIDERS.filter((p) => p.file === file).map((p) => [p.name, p.provider]));
      for (const { className, arg } of dynamicResourceSuperArgs(file)) {
        assert.ok(exported.has(arg), `${file}: ${className} passes ${arg || "nothing"} to super(); pass an exported provider object (export const fooProvider: pulumi.dynamic.ResourceProvider = {...})`);
      }
    }
  });

  it("the marker matches what the serializer writes for a captured Set, Map, WeakMap, WeakSet, Symbol and Date", async () => {
    const set = new Set(["a"]);
    const map = new Map([["a", 1]]);
    const weakMap = new WeakMap<object, number>();
    const weakSet = new WeakSet<object>();
    const symbol = Symbol("a");
    const date = new Date(0);
    const captures: Array<() => unknown> = [
      () => set.has("a"), () => [...set], () => map.get("a"), () => weakMap.get({}), () => weakSet.has({}), () => symbol, () => date.getTime(),
    ];
    for (const capture of captures) {
      const { text } = await pulumi.runtime.serializeFunction(capture, { allowSecrets: true });
      assert.match(text, UNREBUILDABLE, `no marker in the serialization of ${capture}:\n${text}`);
    }
  });

  for (const { file, name, provider } of PROVIDERS) {
    it(`${name} (${file}) loads with its methods`, async () => {
      const text = await serialized(provider);
      const loaded = loadInFreshHost(text, "methods");
      assert.equal(loaded.error, undefined, `${name} does not load in the provider host:\n${loaded.error}`);
      const expected = METHODS.filter((m) => typeof (provider as unknown as Record<string, unknown>)[m] === "function");
      assert.ok(expected.includes("create"), `${name} has no create`);
      assert.deepEqual(loaded.methods, expected);
    });

    it(`${name} (${file}) captures no Set, Map, WeakMap, WeakSet, WeakRef, Symbol, Date or typed array`, async () => {
      const text = await serialized(provider);
      const offending = text.split("\n").filter((line) => UNREBUILDABLE.test(line)).map((line) => line.trim().slice(0, 200));
      const markers = [...new Set(text.match(new RegExp(UNREBUILDABLE, "g")) ?? [])];
      assert.ok(markers.length === 0, `${name} (${file}) captures a value the closure serializer cannot rebuild (${markers.join(", ")}); use an array or plain object at module level, or build it inside the function:\n${offending.join("\n")}`);
    });
  }
});

describe("Sensitive inside a serialized closure", function () {
  this.timeout(60_000);

  it("still reveals, refuses when unavailable, and prints only [secret]", async () => {
    const probe = () => {
      const secret = new Sensitive("plain-text-value");
      const missing = new Sensitive(undefined);
      let refusal = "";
      try {
        missing.reveal("etcd key");
      } catch (err) {
        refusal = (err as Error).message;
      }
      return {
        revealed: secret.reveal("the key"),
        available: [secret.available, missing.available],
        printed: [String(secret), `${secret}`, JSON.stringify({ secret }), inspect(secret), inspect({ secret })],
        keys: Object.keys(secret),
        refusal,
      };
    };
    const serialized = await pulumi.runtime.serializeFunction(() => probe(), { allowSecrets: true });
    const loaded = loadInFreshHost(serialized.text, "value");
    assert.equal(loaded.error, undefined, loaded.error);
    const expected = probe();
    assert.deepEqual(loaded.value, expected);
    assert.deepEqual(expected.printed, ["[secret]", "[secret]", '{"secret":"[secret]"}', "[secret]", "{ secret: [secret] }"]);
    assert.equal(expected.revealed, "plain-text-value");
    assert.deepEqual(expected.available, [true, false]);
    assert.deepEqual(expected.keys, []);
    assert.match(expected.refusal, /^etcd key is an encrypted stack value/);
  });
});

describe("our errors survive the closure serializer", () => {
  // Inside a dynamic provider a class runs as the serializer rewrote it: `Error.call(this, message)` sets nothing,
  // so without the constructors' own `this.message = message` the engine printed "undefined".
  const throwers: Array<[string, () => never]> = [
    ["UserError", () => { throw new UserError("user message"); }],
    ["UnreachableError", () => { throw new UnreachableError("unreachable message"); }],
    ["CidrError", () => { throw new CidrError("cidr message", "unparsable"); }],
    ["YamlEditError", () => { throw new YamlEditError("yaml message"); }],
    ["ManifestFlagError", () => { throw new ManifestFlagError("flag message"); }],
    ["SnapshotStreamError", () => { throw new SnapshotStreamError("stream message"); }],
  ];
  for (const [name, thrower] of throwers) {
    it(`${name} keeps its message`, async () => {
      const serialized = await pulumi.runtime.serializeFunction(thrower);
      const exported: Record<string, () => never> = {};
      new Function("exports", "require", serialized.text)(exported, require);
      assert.throws(() => exported[serialized.exportName](), (err: { message?: string }) => typeof err.message === "string" && err.message.endsWith(" message"));
    });
  }
});
