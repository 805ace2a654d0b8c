// Runs Pulumi program code under the SDK's mock monitor (pulumi.runtime.setMocks) and records every resource
// it declares: type, name, URN, parent, direct dependencies (dependsOn and input dependencies, as the engine
// would receive them), retainOnDelete, and the inputs both deserialized and in wire form (secret markers kept).
// Mocks stand in for the engine only to show the graph's shape, order and inputs; what the inputs DO is proven
// elsewhere by applying them to the real test bed.
import * as pulumi from "@pulumi/pulumi";
import * as rpc from "@pulumi/pulumi/runtime/rpc";
import { useConfigMapReader } from "../../components/liveConfigMaps";

export interface RegisteredResource {
  type: string;
  name: string;
  urn: string;
  parentUrn: string;
  /** true for ConfigMap.get and friends: a read of an existing object, not a change. */
  read: boolean;
  id?: string;
  /** Inputs as the provider would get them (secrets unwrapped). */
  inputs: Record<string, any>;
  /** Inputs on the wire: secrets are { [rpc.specialSigKey]: rpc.specialSecretSig, value }. */
  rawInputs: Record<string, unknown>;
  dependencies: string[];
  retainOnDelete: boolean;
}

export interface MockGraph {
  /** "namespace/name" of every live ConfigMap the program read (components/liveConfigMaps.ts), in order. */
  configMapReads: string[];
  resources: RegisteredResource[];
  /** The resource with exactly this logical name; throws naming what exists otherwise. */
  named(name: string): RegisteredResource;
  ofType(type: string): RegisteredResource[];
  /** True when `later` depends on `earlier`, directly or through other resources. */
  dependsOn(later: RegisteredResource, earlier: RegisteredResource): boolean;
}

export interface MockOptions {
  /** State for a read (ConfigMap.get etc.): by type and id. Missing: the read fails like a missing object. */
  readState?: (type: string, id: string) => Record<string, unknown> | undefined;
  /** Outputs of a created resource (default: its inputs), e.g. the stdout of a RemoteScript read step. */
  outputs?: (resource: { type: string; name: string; inputs: Record<string, any> }) => Record<string, unknown>;
  preview?: boolean;
}

interface RegisterRequest {
  getType(): string;
  getName(): string;
  getParent(): string;
  getObject(): { toJavaScript(): Record<string, unknown> } | undefined;
  getProperties?(): { toJavaScript(): Record<string, unknown> } | undefined;
  getDependenciesList(): string[];
  getRetainondelete?(): boolean;
  getId?(): string;
}

export function isWireSecret(value: unknown): boolean {
  return typeof value === "object" && value !== null && (value as Record<string, unknown>)[rpc.specialSigKey] === rpc.specialSecretSig;
}

function unwrapSecrets(value: unknown): unknown {
  if (isWireSecret(value)) return unwrapSecrets((value as { value: unknown }).value);
  if (Array.isArray(value)) return value.map(unwrapSecrets);
  if (typeof value === "object" && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, unwrapSecrets(v)]));
  return value;
}

/** An Output's value (or its failure): a failed apply() is how a component fails closed at deployment time. */
export function outputValue<T>(output: pulumi.Output<T>): Promise<T> {
  return (output as unknown as { promise(): Promise<T> }).promise();
}

/** The wire inputs as JSON with every secret replaced by "[secret]": what would be readable in plaintext. */
export function plaintextOf(raw: unknown): string {
  return JSON.stringify(raw, (_key, value) => (isWireSecret(value) ? "[secret]" : value));
}

/**
 * A registration whose inputs never resolve (an apply() that threw inside a component, a read the mocks cannot
 * answer) leaves the SDK's RPC queue pending forever. Rather than hang the suite, say so and name the last ones.
 */
const STUCK_AFTER_MS = 60_000;

async function settle(count: () => number, describeLast: () => string): Promise<void> {
  // Resources declared inside apply() callbacks register after earlier RPCs resolve: drain the RPC queue until the
  // set of registrations stops growing for a few rounds.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const settings = require("@pulumi/pulumi/runtime/settings") as { waitForRPCs(): Promise<void> };
  let stable = 0;
  let last = -1;
  while (stable < 5) {
    let timer: NodeJS.Timeout | undefined;
    const stuck = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`captureGraph: the program's RPCs never settled (an apply() threw, or a read had no mock state); last registered: ${describeLast()}`)),
        STUCK_AFTER_MS,
      );
    });
    try {
      await Promise.race([settings.waitForRPCs(), stuck]);
    } finally {
      clearTimeout(timer);
    }
    await new Promise((resolve) => setImmediate(resolve));
    const now = count();
    stable = now === last ? stable + 1 : 0;
    last = now;
  }
}

export async function captureGraph(build: () => unknown, options: MockOptions = {}): Promise<MockGraph> {
  const resources: RegisteredResource[] = [];
  const errors: unknown[] = [];
  // The live ConfigMaps the components edit come from readState, as a ConfigMap.get would.
  const configMapReads: string[] = [];
  useConfigMapReader(async (namespace, name) => {
    configMapReads.push(`${namespace}/${name}`);
    return options.readState?.("kubernetes:core/v1:ConfigMap", `${namespace}/${name}`)?.data as Record<string, string> | undefined;
  });
  await pulumi.runtime.setMocks({
    newResource: (args) => {
      if (args.id !== undefined && args.id !== "" && args.custom) {
        const state = options.readState?.(args.type, args.id);
        if (!state) throw new Error(`mock: no object ${args.type} ${args.id} (readState returned nothing)`);
        return { id: args.id, state };
      }
      const outputs = options.outputs?.({ type: args.type, name: args.name, inputs: args.inputs }) ?? args.inputs;
      return { id: `${args.name}-id`, state: { ...args.inputs, ...outputs } };
    },
    call: () => ({}),
  }, "cidr-migration", "test", options.preview ?? false);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const settings = require("@pulumi/pulumi/runtime/settings") as { getMonitor(): Record<string, (req: unknown, cb: unknown) => unknown> };
  const monitor = settings.getMonitor();
  for (const method of ["registerResource", "readResource"] as const) {
    const original = monitor[method].bind(monitor);
    monitor[method] = (req: unknown, cb: unknown) => {
      const request = req as RegisterRequest;
      const read = method === "readResource";
      const wire = (read ? request.getProperties?.() : request.getObject())?.toJavaScript() ?? {};
      const entry: RegisteredResource = {
        type: request.getType(),
        name: request.getName(),
        urn: "",
        parentUrn: request.getParent(),
        read,
        id: read ? request.getId?.() : undefined,
        inputs: unwrapSecrets(rpc.deserializeProperties({ toJavaScript: () => wire } as never)) as Record<string, any>,
        rawInputs: wire,
        dependencies: request.getDependenciesList(),
        retainOnDelete: request.getRetainondelete?.() ?? false,
      };
      resources.push(entry);
      return original(req, (err: unknown, response: { getUrn(): string } | undefined) => {
        if (err) errors.push(err);
        if (response) entry.urn = response.getUrn();
        (cb as (e: unknown, r: unknown) => void)(err, response);
      });
    };
  }
  // The program itself is async (it discovers the cluster before declaring anything): wait for it, then for the RPCs.
  await build();
  await settle(
    () => resources.length,
    () => resources.slice(-3).map((r) => `${r.type} ${r.name}`).join(", ") || "nothing",
  );
  if (errors.length > 0) throw errors[0];

  const byUrn = new Map<string, RegisteredResource>();
  for (const r of resources) if (r.urn) byUrn.set(r.urn, r);
  const graph: MockGraph = {
    configMapReads,
    resources,
    named(name) {
      const found = resources.filter((r) => r.name === name);
      if (found.length !== 1) throw new Error(`expected one resource named ${name}, found ${found.length}; declared: ${resources.map((r) => r.name).join(", ")}`);
      return found[0];
    },
    ofType: (type) => resources.filter((r) => r.type === type),
    dependsOn(later, earlier) {
      const seen = new Set<string>();
      const stack = [later];
      while (stack.length > 0) {
        const current = stack.pop()!;
        const next = current.dependencies;
        for (const urn of next) {
          if (urn === earlier.urn) return true;
          if (seen.has(urn)) continue;
          seen.add(urn);
          const resource = byUrn.get(urn);
          if (resource) stack.push(resource);
        }
      }
      return false;
    },
  };
  return graph;
}
