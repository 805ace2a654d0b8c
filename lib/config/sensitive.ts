import { inspect } from "util";

const REDACTED = "[secret]";

function redacted(): string {
  return REDACTED;
}

/**
 * A secret value (SSH key, etcd key, kubeconfig content) that refuses to print itself.
 * JSON, string conversion and util.inspect all show "[secret]"; only reveal() gives the value,
 * so a secret cannot leak into logs, errors or plan JSON by accident.
 *
 * The value lives only in the closure of the instance's own `reveal`, not in a field. This class is copied into
 * the dynamic providers by the Pulumi SDK's closure serialization (`__provider`), which re-emits each method as a
 * standalone function and cannot carry:
 * - an ECMAScript private field (`#value`): the copied method no longer has its enclosing class, so the provider
 *   fails to load ("Private field '#value' must be declared in an enclosing class");
 * - a symbol-keyed member on the prototype (`[inspect.custom]()`): the symbol is re-emitted as a plain object, and
 *   using that as a key throws while the provider loads;
 * - a module-level WeakMap or Symbol: they are re-emitted as plain objects, which throw when first used.
 * So every member is plain (string-keyed on the prototype), and the inspect.custom symbol is read from `util` when
 * an instance is built. test/unit/providerSerialization.test.ts holds this.
 */
export class Sensitive {
  /** False when the secret exists but cannot be decrypted here. */
  declare readonly available: boolean;
  /** The plaintext; `what` names the value in the error thrown when it is not available. */
  declare readonly reveal: (what: string) => string;

  /** `value` is undefined when the secret exists but cannot be decrypted here (a `secure:` stack value read by the CLI). */
  constructor(value: string | undefined) {
    // Non-enumerable and read-only, like the prototype members they replace: JSON.stringify, spreads, Object.keys
    // and deepEqual see none of them.
    Object.defineProperties(this, {
      available: { value: value !== undefined },
      reveal: {
        value: (what: string): string => {
          if (value === undefined) {
            throw new Error(`${what} is an encrypted stack value that only Pulumi can decrypt; pass it another way (see the README's config reference)`);
          }
          return value;
        },
      },
      [inspect.custom]: { value: redacted },
    });
  }

  toString(): string {
    return REDACTED;
  }

  toJSON(): string {
    return REDACTED;
  }
}
