/**
 * embedScript: put a whole generated step script into another script as a variable, so a composite step (write →
 * wait → restore) runs tested step scripts unchanged with `bash -c "$VAR"`.
 *
 * The script goes into a quoted here-document (`<<'DELIM'`): the shell expands nothing in it, a reviewer reads it
 * as plain text in `pulumi preview`, and shellcheck checks each step script on its own (not as one string).
 * API: `embedScript("WAIT_SCRIPT", script)` → ShellCode `readonly WAIT_SCRIPT=$(cat <<'...' ... )`.
 * Refused: a variable name that is not UPPER_CASE, a script containing the delimiter line.
 */
import { ShellCode } from "../remoteScript";

export function embedScript(variable: string, script: string): ShellCode {
  if (!/^[A-Z][A-Z0-9_]*$/.test(variable)) throw new Error(`embedded script variable "${variable}" must be UPPER_CASE`);
  const delimiter = `CIDR_MIGRATION_${variable}_END`;
  if (script.split("\n").some((line) => line === delimiter)) throw new Error(`embedded script for ${variable} contains its delimiter line ${delimiter}`);
  const body = script.replace(/\n$/, "");
  // Generated step scripts are trusted code; the quoted here-document keeps every byte of them literal. Each
  // defines its own ROOT, so the outer script does not need one for them.
  return ShellCode.unsafeFromTrustedText(`${variable}=$(cat <<'${delimiter}'\n${body}\n${delimiter}\n)\nreadonly ${variable}`);
}
