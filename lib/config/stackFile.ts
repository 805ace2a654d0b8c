import { readFileSync } from "fs";
import * as path from "path";
import { parse } from "yaml";
import { CONFIG_NAMESPACE, ConfigSource } from "./configReader";
import { UserError } from "./errors";

/**
 * Reads the `cidr-migration:` keys of a Pulumi.<stack>.yaml file for the CLI, which runs without the Pulumi engine.
 * `secure:` values stay encrypted (the validator sees they exist and are secret); other namespaces are ignored.
 */
export function readStackFile(file: string): ConfigSource {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new UserError(`--config ${file}: cannot read the stack file (${(err as NodeJS.ErrnoException).code ?? err}); pass an existing Pulumi.<stack>.yaml`);
  }
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (err) {
    throw new UserError(`--config ${file}: not valid YAML (${(err as Error).message.split("\n")[0]})`);
  }
  const config = (doc as { config?: unknown } | null)?.config;
  if (config === undefined || config === null) return { values: {} };
  if (typeof config !== "object" || Array.isArray(config)) {
    throw new UserError(`--config ${file}: "config" must be a map of keys like ${CONFIG_NAMESPACE}:serviceCidr`);
  }
  const values: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config as Record<string, unknown>)) {
    const [namespace, name] = key.includes(":") ? key.split(":", 2) : [CONFIG_NAMESPACE, key];
    if (namespace === CONFIG_NAMESPACE) values[name] = value;
  }
  return { values };
}

/** Pulumi.<stack>.yaml beside Pulumi.yaml in the project directory. */
export function stackFilePath(stack: string, projectDir: string): string {
  return path.join(projectDir, `Pulumi.${stack}.yaml`);
}
