/** Errors a user can cause or fix. The CLI prints their message as one line and exits with exitCode; never a stack. */

export const EXIT_OK = 0;
export const EXIT_FINDINGS = 1;
export const EXIT_INVALID_INPUT = 2;
export const EXIT_UNREACHABLE = 3;

/**
 * Every Error subclass of ours sets `this.message` itself: inside a dynamic provider the class runs as Pulumi's
 * closure serializer rewrote it (`Error.call(this, message)`, which sets nothing), and the engine showed "undefined".
 */
export class UserError extends Error {
  constructor(message: string, readonly exitCode: number = EXIT_INVALID_INPUT) {
    super(message);
    this.message = message;
    this.name = "UserError";
  }
}

/** The cluster (apiserver, etcd) could not be reached. */
export class UnreachableError extends UserError {
  constructor(message: string) {
    super(message, EXIT_UNREACHABLE);
    this.name = "UnreachableError";
  }
}

export interface ConfigProblem {
  /** The config key, e.g. "cidr-migration:serviceCidr.to". */
  key: string;
  message: string;
}

/** Every problem found in the stack config at once, so the operator fixes them in one round. */
export class ConfigError extends UserError {
  constructor(readonly problems: ConfigProblem[]) {
    super(problems.map((p) => `${p.key}: ${p.message}`).join("\n"));
    this.name = "ConfigError";
  }
}
