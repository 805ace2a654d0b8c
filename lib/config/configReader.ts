/**
 * Reading the raw stack config one key at a time: each read returns a typed value or records a problem naming the
 * key (`cidr-migration:<key>`), the bad value and the `pulumi config set` that fixes it, so validateConfig
 * (config.ts) reports every problem at once. Secret values are wrapped as Sensitive here, as they are read.
 */
import { closest } from "fastest-levenshtein";
import { CidrError, parseCidr } from "../net/cidr";
import { ConfigProblem } from "./errors";
import { Sensitive } from "./sensitive";

export const CONFIG_NAMESPACE = "cidr-migration";

/** A `secure:` value from a stack file: the CLI cannot decrypt it, but knows it exists and is secret. */
export interface EncryptedValue {
  secure: string;
}

export interface ConfigSource {
  values: Record<string, unknown>;
  /** Top-level keys Pulumi reports as secret (pulumi.runtime.isConfigSecret); their nested secrets count as secure. */
  secretKeys?: ReadonlySet<string>;
}

/** A config value as Pulumi hands it to a program or prints it: structured values JSON-encoded, plain strings as is. */
export function parseConfigValue(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

export function isEncrypted(value: unknown): value is EncryptedValue {
  return typeof value === "object" && value !== null && "secure" in value && Object.keys(value).length === 1;
}

/**
 * Pulumi writes a `secure:` value as ciphertext in base64: "v1:NONCE:CIPHERTEXT" (passphrase provider) or one base64
 * string (service and cloud KMS providers). Anything else was typed or pasted by hand and Pulumi cannot decrypt it.
 */
const SECURE_CIPHERTEXT = /^[A-Za-z0-9+/_-]+={0,2}(:[A-Za-z0-9+/_-]+={0,2})*$/;

function malformedSecure(value: EncryptedValue): string | undefined {
  const text = value.secure;
  if (typeof text !== "string") return `holds a ${text === null ? "null" : typeof text}, not ciphertext`;
  if (text.trim() === "") return "is empty";
  if (!SECURE_CIPHERTEXT.test(text)) return "is not ciphertext Pulumi wrote (base64, e.g. v1:…:…); it was edited by hand";
  return undefined;
}

export function show(value: unknown): string {
  if (isEncrypted(value)) return "[secret]";
  return JSON.stringify(value) ?? String(value);
}

/**
 * The exact `pulumi config set` command that fixes a key, so an error says what to do. A secret is read from a file on stdin (`< FILE`): a PEM key or
 * certificate given on the command line starts with "-----" and pulumi takes it for a flag ("bad flag syntax"),
 * printing it in the error.
 */
export function setCommand(key: string, example: string, secret = false): string {
  const nested = key.includes(".") || key.includes("[");
  return `pulumi config set${secret ? " --secret" : ""}${nested ? ` --path '${key}'` : ` ${key}`} ${example}`;
}

/** A problem found on a stack config key, named as `pulumi config` spells it. */
export function configProblem(key: string, message: string): ConfigProblem {
  return { key: `${CONFIG_NAMESPACE}:${key}`, message };
}

export class Reader {
  readonly problems: ConfigProblem[] = [];

  constructor(private readonly source: ConfigSource) {}

  fail(key: string, message: string): void {
    this.problems.push(configProblem(key, message));
  }

  raw(key: string): unknown {
    return this.source.values[key];
  }

  object(key: string): Record<string, unknown> | undefined {
    const value = this.raw(key);
    if (value === undefined || value === null) return undefined;
    if (typeof value !== "object" || Array.isArray(value) || isEncrypted(value)) {
      this.fail(key, `expected an object, got ${show(value)}; see the config reference in the README`);
      return undefined;
    }
    return value as Record<string, unknown>;
  }

  string(key: string, value: unknown, opts: { required: boolean; example: string }): string | undefined {
    if (value === undefined || value === null || value === "") {
      if (opts.required) this.fail(key, `is required; set it with: ${setCommand(key, opts.example)}`);
      return undefined;
    }
    if (typeof value !== "string") {
      this.fail(key, `expected a string, got ${show(value)}; set it with: ${setCommand(key, opts.example)}`);
      return undefined;
    }
    return value;
  }

  /** A string that must also pass `problem` (see lib/config/nodeIdentity); kept even when it fails, so later checks see the entry. */
  checked(key: string, value: string | undefined, problem: (v: string) => string | undefined, example: string): string | undefined {
    const why = value === undefined ? undefined : problem(value);
    if (why) this.fail(key, `${show(value)} ${why}; set it with: ${setCommand(key, example)}`);
    return value;
  }

  integer(key: string, value: unknown, opts: { min: number; max?: number; fallback: number }): number {
    if (value === undefined || value === null) return opts.fallback;
    const n = typeof value === "string" && /^\d+$/.test(value) ? Number(value) : value;
    if (typeof n !== "number" || !Number.isInteger(n) || n < opts.min || (opts.max !== undefined && n > opts.max)) {
      const range = opts.max !== undefined ? `${opts.min}..${opts.max}` : `>= ${opts.min}`;
      this.fail(key, `expected an integer ${range}, got ${show(value)}`);
      return opts.fallback;
    }
    return n;
  }

  boolean(key: string, value: unknown, fallback: boolean): boolean {
    if (value === undefined || value === null) return fallback;
    if (value === true || value === "true") return true;
    if (value === false || value === "false") return false;
    this.fail(key, `expected true or false, got ${show(value)}`);
    return fallback;
  }

  oneOf<T extends string>(key: string, value: unknown, allowed: readonly T[], fallback: T): T {
    if (value === undefined || value === null) return fallback;
    if (typeof value === "string" && (allowed as readonly string[]).includes(value)) return value as T;
    const near = typeof value === "string" ? closest(value, [...allowed]) : allowed[0];
    this.fail(key, `${show(value)} is not one of ${allowed.join(", ")}; did you mean "${near}"?`);
    return fallback;
  }

  /** A secret must arrive encrypted: a plaintext key in a stack file would end up in git. */
  secret(key: string, topKey: string, value: unknown): Sensitive | undefined {
    if (value === undefined || value === null || value === "") return undefined;
    if (isEncrypted(value)) return this.encrypted(key, value);
    if (typeof value === "string" && this.source.secretKeys?.has(topKey)) return new Sensitive(value);
    this.fail(key, `is a secret but was given in plaintext; set it with: ${setCommand(key, "< FILE", true)}`);
    return undefined;
  }

  /** A `secure:` value the CLI cannot decrypt; a malformed one is refused here rather than when Pulumi decrypts it. */
  encrypted(key: string, value: EncryptedValue): Sensitive | undefined {
    const why = malformedSecure(value);
    if (!why) return new Sensitive(undefined);
    this.fail(key, `its secure: value ${why}; set it again with: ${setCommand(key, "< FILE", true)}`);
    return undefined;
  }

  cidr(key: string, value: unknown, example: string): string | undefined {
    const text = this.string(key, value, { required: true, example });
    if (text === undefined) return undefined;
    try {
      return parseCidr(text).cidr;
    } catch (err) {
      if (err instanceof CidrError) {
        this.fail(key, err.message);
        return undefined;
      }
      throw err;
    }
  }

  unknownKeys(scope: string, obj: Record<string, unknown>, known: readonly string[]): void {
    for (const k of Object.keys(obj)) {
      if (!known.includes(k)) {
        this.fail(scope ? `${scope}.${k}` : k, `unknown key; did you mean "${closest(k, known as string[])}"?`);
      }
    }
  }
}
