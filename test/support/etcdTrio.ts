// A real three-member etcd of the test-bed version on loopback, for the control-plane node address tests (issue 16):
// members m1, m2, m3 with their own peer and client ports, a writer that writes through m1 and m2 the whole time,
// and the checks that quorum held (no write refused) and nothing acknowledged was lost.
import { strict as assert } from "assert";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { Etcd3 } from "etcd3";
import { ETCD_BINARY, freePort } from "../testbed/etcd";
import { ManagedProcess, startProcess, waitUntil } from "../testbed/processes";

export interface TrioMember { name: string; host: string; peer: number; client: number; proc?: ManagedProcess }

export interface EtcdTrio {
  dir: string;
  members: TrioMember[];
  peerUrl(m: TrioMember): string;
  clientUrl(m: TrioMember): string;
  /** Starts `m` (its data dir under `dir`) with `initialCluster`, as a new cluster or joining an existing one. */
  start(m: TrioMember, initialCluster: string, state?: "new" | "existing"): void;
  /** `name=peerURL` of every member as they are now. */
  initialCluster(): string;
  healthy(m: TrioMember): Promise<boolean>;
  stop(): Promise<void>;
}

export async function startEtcdTrio(token: string, hosts: readonly string[] = []): Promise<EtcdTrio> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cidr-etcd3-"));
  const members: TrioMember[] = [];
  const peerUrl = (m: TrioMember) => `http://${m.host}:${m.peer}`;
  const clientUrl = (m: TrioMember) => `http://127.0.0.1:${m.client}`;
  const trio: EtcdTrio = {
    dir,
    members,
    peerUrl,
    clientUrl,
    start(m, initialCluster, state = "new") {
      m.proc = startProcess(ETCD_BINARY, [
        `--name=${m.name}`,
        `--data-dir=${path.join(dir, m.name)}`,
        `--listen-peer-urls=${peerUrl(m)}`,
        `--initial-advertise-peer-urls=${peerUrl(m)}`,
        `--listen-client-urls=${clientUrl(m)}`,
        `--advertise-client-urls=${clientUrl(m)}`,
        `--initial-cluster=${initialCluster}`,
        `--initial-cluster-state=${state}`,
        `--initial-cluster-token=${token}`,
      ], path.join(dir, `${m.name}.log`));
    },
    initialCluster: () => members.map((m) => `${m.name}=${peerUrl(m)}`).join(","),
    async healthy(m) {
      const client = new Etcd3({ hosts: clientUrl(m), dialTimeout: 1000 });
      try {
        await client.put(`health/${m.name}`).value("ok");
        return true;
      } catch {
        return false;
      } finally {
        client.close();
      }
    },
    async stop() {
      for (const m of members) await m.proc?.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  for (const [i, name] of ["m1", "m2", "m3"].entries()) members.push({ name, host: hosts[i] ?? "127.0.0.1", peer: await freePort(), client: await freePort() });
  const initialCluster = trio.initialCluster();
  for (const m of members) trio.start(m, initialCluster);
  for (const m of members) await waitUntil(() => trio.healthy(m), { timeoutMs: 30_000, what: `etcd member ${m.name} serving` });
  return trio;
}

export interface Writer {
  acknowledged: string[];
  failed: string[];
  /** Waits for a few more acknowledged writes: a lost quorum stalls them, and the wait fails naming `phase`. */
  goesOn(phase: string): Promise<void>;
  stop(): Promise<void>;
}

/** Writes `writer/NNNNNN` through `client` every 10 ms until stopped, recording each answer. */
export function startWriter(client: Etcd3): Writer {
  const acknowledged: string[] = [];
  const failed: string[] = [];
  let writing = true;
  const loop = (async () => {
    for (let i = 0; writing; i++) {
      const key = `writer/${String(i).padStart(6, "0")}`;
      try {
        await client.put(key).value(String(i));
        acknowledged.push(key);
      } catch (err) {
        failed.push(`${key}: ${(err as Error).message}`);
      }
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  return {
    acknowledged,
    failed,
    async goesOn(phase) {
      const seen = acknowledged.length;
      await waitUntil(async () => acknowledged.length >= seen + 3, { timeoutMs: 30_000, what: `writes acknowledged ${phase}` });
    },
    async stop() {
      writing = false;
      await loop;
    },
  };
}

/** Makes `m` the leader (so that a hand-off is exercised every run). */
export async function makeLeader(trio: EtcdTrio, m: TrioMember): Promise<void> {
  const via = new Etcd3({ hosts: trio.clientUrl(m) });
  try {
    const { members } = await via.cluster.memberList({});
    const id = members.find((x) => x.name === m.name)!.ID;
    const leaderNow = (await via.maintenance.status()).leader;
    if (leaderNow === id) return;
    const leader = members.find((x) => x.ID === leaderNow)!;
    const viaLeader = new Etcd3({ hosts: leader.clientURLs });
    try {
      await viaLeader.maintenance.moveLeader({ targetID: id });
    } finally {
      viaLeader.close();
    }
  } finally {
    via.close();
  }
}

/** A trio for the enclosing mocha suite: started before its tests, stopped after them; `hosts`: each member's peer address (loopback ones; 127.0.0.1 by default). */
export function useEtcdTrio(token: string, hosts: readonly string[] = []): () => EtcdTrio {
  let trio: EtcdTrio | undefined;
  before(async () => {
    trio = await startEtcdTrio(token, hosts);
  });
  after(async () => {
    await trio?.stop();
  });
  return () => trio!;
}

/**
 * After a move of m3 to `m3Host`: quorum held (no write refused), every acknowledged write is there read through
 * m3, and the member list names every member at its peer URL, m3 at its new one.
 */
export async function assertNothingLost(trio: EtcdTrio, writer: Writer, m3Host: string): Promise<void> {
  const [m1, m2, m3] = trio.members;
  assert.deepEqual(writer.failed, [], "quorum held: no write was refused");
  const m3Client = new Etcd3({ hosts: trio.clientUrl(m3) });
  try {
    const stored = await m3Client.getAll().prefix("writer/").keys();
    assert.deepEqual(writer.acknowledged.filter((k) => !stored.includes(k)), [], "no acknowledged write is missing, read through m3");
    const listed = (await m3Client.cluster.memberList({})).members.map((m) => [m.name, m.peerURLs]);
    assert.deepEqual(listed.sort(), [["m1", [trio.peerUrl(m1)]], ["m2", [trio.peerUrl(m2)]], ["m3", [`http://${m3Host}:${m3.peer}`]]]);
  } finally {
    m3Client.close();
  }
}
