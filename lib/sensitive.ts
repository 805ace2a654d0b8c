import { inspect } from "util";

const REDACTED = "[secret]";

/**
 * A secret value (SSH key, etcd key, kubeconfig content) that refuses to print itself.
 * JSON, string conversion and util.inspect all show "[secret]"; only reveal() gives the value,
 * so a secret cannot leak into logs, errors or plan JSON by accident.
 */
export class Sensitive {
  readonly #value: string | undefined;

  /** `value` is undefined when the secret exists but cannot be decrypted here (a `secure:` stack value read by the CLI). */
  constructor(value: string | undefined) {
    this.#value = value;
  }

  get available(): boolean {
    return this.#value !== undefined;
  }

  reveal(what: string): string {
    if (this.#value === undefined) {
      throw new Error(`${what} is an encrypted stack value that only Pulumi can decrypt; pass it another way (see the README's config reference)`);
    }
    return this.#value;
  }

  toString(): string {
    return REDACTED;
  }

  toJSON(): string {
    return REDACTED;
  }

  [inspect.custom](): string {
    return REDACTED;
  }
}
