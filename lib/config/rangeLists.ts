import { RangeMigrationConfig } from "./migrationConfig";

/**
 * A run's ranges as the components' flags and kubeadm list them: one range, or a dual-stack pair comma-separated,
 * primary family first (issue 17). An add-family run's `from` is the first family's range alone.
 */
export interface RangeLists {
  service: { from: string; to: string };
  pod: { from: string; to: string };
}

const list = (primary: string, second: string | undefined) => (second === undefined ? primary : `${primary},${second}`);

export function rangeLists(config: Pick<RangeMigrationConfig, "serviceCidr" | "podCidr" | "secondFamily">): RangeLists {
  const second = config.secondFamily;
  return {
    service: { from: list(config.serviceCidr.from, second?.serviceCidr.from), to: list(config.serviceCidr.to, second?.serviceCidr.to) },
    pod: { from: list(config.podCidr.from, second?.podCidr.from), to: list(config.podCidr.to, second?.podCidr.to) },
  };
}
