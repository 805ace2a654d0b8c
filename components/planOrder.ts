/**
 * The plan is the one source of the run's order; index.ts declares the resources, and this checks that they agree.
 *
 * Each resource is declared through `declare`, naming the plan steps it carries out and what it waits for. Once the
 * graph is built, `check` proves two things, and stops the program before anything runs when either fails (a bug
 * in cidr-migration, never the user's input):
 * - every step of the plan is carried out by some resource, so nothing the plan (and its estimate) promises is
 *   missing from the graph;
 * - for every "B waits for A" in the plan, B's resource waits for A's, directly or through others (a resource that
 *   carries several steps orders them itself, as ControlPlane and NodeRollout do).
 */
import * as pulumi from "@pulumi/pulumi";
import { Plan } from "../lib/plan/planModel";

export class PlanOrder {
  private readonly carrier = new Map<string, pulumi.Resource>();
  /** Plan steps this run has nothing to do for (found done already; skip() logs why). */
  private readonly skipped = new Set<string>();
  private readonly names = new Map<pulumi.Resource, string>();
  private readonly waitsFor = new Map<pulumi.Resource, pulumi.Resource[]>();

  /** Every step id of the plan, in plan order (listed once: index.ts selects from it for each resource). */
  private readonly stepIds: string[];

  constructor(private readonly plan: Plan) {
    this.stepIds = plan.phases.flatMap((p) => p.steps.map((s) => s.id));
  }

  /** The plan's step ids that `match` selects, in plan order. */
  steps(match: (id: string) => boolean): string[] {
    return this.stepIds.filter(match);
  }

  /**
   * Declares the resource that carries out the plan steps `ids` (none, for a resource the plan has no step for)
   * and waits for `dependsOn`; `make` gets the options to create it with.
   */
  declare<R extends pulumi.Resource>(name: string, ids: readonly string[], dependsOn: ReadonlyArray<pulumi.Resource | undefined>, make: (opts: { dependsOn: pulumi.Resource[] }) => R): R {
    const waits = dependsOn.filter((r): r is pulumi.Resource => r !== undefined);
    const resource = make({ dependsOn: waits });
    this.names.set(resource, name);
    this.waitsFor.set(resource, waits);
    this.registerIds(name, ids, resource);
    return resource;
  }

  /**
   * Records that waiting for `finished` is waiting for the whole of `component` (a component's last children,
   * such as NodeRollout.done), so a later resource may wait for those instead of the component.
   */
  finishedBy(component: pulumi.Resource, finished: readonly pulumi.Resource[]): void {
    for (const resource of finished) {
      if (!this.waitsFor.has(resource)) this.waitsFor.set(resource, [component]);
    }
  }

  /** Plan steps with nothing to do on this cluster (e.g. the old pool is gone already): no resource, logged why. */
  skip(ids: readonly string[], why: string): void {
    for (const id of ids) this.skipped.add(id);
    if (ids.length > 0) void pulumi.log.info(`${ids.join(", ")}: ${why}; nothing to do`);
  }

  private registerIds(name: string, ids: readonly string[], resource: pulumi.Resource): void {
    for (const id of ids) {
      if (this.carrier.has(id)) throw new pulumi.RunError(`internal: plan step ${id} is carried out by both ${this.names.get(this.carrier.get(id)!)} and ${name}`);
      this.carrier.set(id, resource);
    }
  }

  /** What disagrees between the plan and the graph declared so far, one line each. */
  disagreements(): string[] {
    const problems: string[] = [];
    const steps = new Map(this.plan.phases.flatMap((p) => p.steps).map((s) => [s.id, s]));
    // the resources a step's resource must wait for: a skipped step's own prerequisites stand in for it
    const carriersOf = (id: string, seen = new Set<string>()): Array<{ resource: pulumi.Resource; id: string }> => {
      const resource = this.carrier.get(id);
      if (resource) return [{ resource, id }];
      if (!this.skipped.has(id) || seen.has(id)) return [];
      seen.add(id);
      return (steps.get(id)?.dependsOn ?? []).flatMap((d) => carriersOf(d, seen));
    };
    for (const step of steps.values()) {
      const later = this.carrier.get(step.id);
      if (!later) {
        if (!this.skipped.has(step.id)) problems.push(`plan step ${step.id} has no resource in the graph`);
        continue;
      }
      for (const before of step.dependsOn) {
        for (const earlier of carriersOf(before)) {
          if (earlier.resource !== later && !this.reaches(later, earlier.resource)) {
            problems.push(`${this.names.get(later)} (plan step ${step.id}) does not wait for ${this.names.get(earlier.resource)} (plan step ${earlier.id})`);
          }
        }
      }
    }
    return problems;
  }

  /** Stops the program when the graph does not carry out the plan in its order. */
  check(): void {
    const problems = this.disagreements();
    if (problems.length > 0) {
      throw new pulumi.RunError(`internal: the graph does not follow the plan: ${problems.join("; ")}. Nothing was changed. This is a bug in cidr-migration: report it with the plan (cidr-migration plan --json)`);
    }
  }

  private reaches(from: pulumi.Resource, to: pulumi.Resource): boolean {
    const seen = new Set<pulumi.Resource>();
    const stack = [...(this.waitsFor.get(from) ?? [])];
    while (stack.length > 0) {
      const next = stack.pop()!;
      if (next === to) return true;
      if (seen.has(next)) continue;
      seen.add(next);
      stack.push(...(this.waitsFor.get(next) ?? []));
    }
    return false;
  }
}
