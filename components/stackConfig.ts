import * as pulumi from "@pulumi/pulumi";
import { validateConfig, ValidationContext } from "../lib/config/config";
import { CONFIG_NAMESPACE, parseConfigValue } from "../lib/config/configReader";
import { ConfigError } from "../lib/config/errors";
import { MigrationConfig } from "../lib/config/migrationConfig";

// The SDK exports this from runtime/config.js but leaves it out of its typings; Config.getSecret uses it internally.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { isConfigSecret } = require("@pulumi/pulumi/runtime/config") as { isConfigSecret(fullKey: string): boolean };

/**
 * Reads every `cidr-migration:` key Pulumi holds for this stack and validates it with lib/config, the same validator
 * the CLI uses. Secret keys arrive decrypted in memory only; lib/config wraps them as Sensitive, and whatever reaches a
 * resource goes through pulumi.secret. Problems become one RunError (no stack trace) before any resource exists.
 */
export function readStackConfig(context: ValidationContext = {}): MigrationConfig {
  const values: Record<string, unknown> = {};
  const secretKeys = new Set<string>();
  const prefix = `${CONFIG_NAMESPACE}:`;
  for (const [fullKey, raw] of Object.entries(pulumi.runtime.allConfig())) {
    if (!fullKey.startsWith(prefix)) continue;
    const key = fullKey.slice(prefix.length);
    values[key] = parseConfigValue(raw);
    if (isConfigSecret(fullKey)) secretKeys.add(key);
  }
  try {
    return validateConfig({ values, secretKeys }, context);
  } catch (err) {
    if (err instanceof ConfigError) throw new pulumi.RunError(`invalid stack config:\n${err.message}`);
    throw err;
  }
}


/** Turns a Sensitive config value into a Pulumi secret, the only form in which it may reach a resource. */
export function secretInput(value: { reveal(what: string): string } | undefined, what: string): pulumi.Output<string> | undefined {
  return value === undefined ? undefined : pulumi.secret(value.reveal(what));
}
