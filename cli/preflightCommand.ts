import { Command } from "commander";
import { readFileSync } from "fs";
import { UserError } from "../lib/config/errors";
import { renderFindingsJson, renderFindingsTable } from "../lib/report/findings";
import { MigrationConfig } from "../lib/config/migrationConfig";
import { EtcdAccess, etcdAccessFromConfig, runPreflight } from "../lib/preflight";
import { readableEtcdCredentials } from "../lib/preflight/etcdAccess";
import { addStackOptions, loadConfigAndKubeConfig, SourceOptions } from "./context";
import { action, outputWidth } from "./run";
import { ensureSandboxRunning } from "./sandboxCommand";

/**
 * `cidr-migration preflight`: the read-only audit before a migration. Exit 0 when clean (info only), 1 when any
 * blocker or warning, 2 for invalid input, 3 when the cluster cannot be reached.
 */

interface PreflightOptions extends SourceOptions {
  json?: boolean;
  allowSecretValues?: boolean;
  etcdCa?: string;
  etcdCert?: string;
  etcdKey?: string;
}

function readCredentialFile(flag: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new UserError(`${flag} ${file}: cannot read the file (${(err as NodeJS.ErrnoException).code ?? err}); pass a PEM file this user can read`);
  }
}

/** etcd client credentials: the --etcd-* files when given, else what the stack config holds (see etcdAccessFromConfig). */
export function etcdAccess(config: MigrationConfig, opts: PreflightOptions): EtcdAccess {
  if ((opts.etcdCert === undefined) !== (opts.etcdKey === undefined)) {
    throw new UserError(`${opts.etcdCert ? "--etcd-key" : "--etcd-cert"} is missing: --etcd-cert and --etcd-key go together`);
  }
  if (!opts.etcdCa && !opts.etcdCert) return etcdAccessFromConfig(config);
  const configured = readableEtcdCredentials(config);
  return {
    credentials: {
      ca: opts.etcdCa ? readCredentialFile("--etcd-ca", opts.etcdCa) : configured.ca,
      cert: opts.etcdCert ? readCredentialFile("--etcd-cert", opts.etcdCert) : configured.cert,
      key: opts.etcdKey ? readCredentialFile("--etcd-key", opts.etcdKey) : configured.key,
    },
  };
}

export function registerPreflightCommand(program: Command): void {
  addStackOptions(
    program
      .command("preflight")
      .description("read-only audit before migrating; exit 0 clean, 1 blockers or warnings, 2 invalid input, 3 unreachable"),
  )
    .option("--json", "print the findings as JSON")
    .option("--allow-secret-values", "show where in each Secret an old address is (default: a count per Secret)")
    .option("--etcd-ca <file>", "etcd CA certificate (PEM), for when the stack's value is a secure: secret")
    .option("--etcd-cert <file>", "etcd client certificate (PEM)")
    .option("--etcd-key <file>", "etcd client key (PEM)")
    .action(
      action(async (opts: PreflightOptions) => {
        const { config, kubeConfig } = await loadConfigAndKubeConfig(opts, ensureSandboxRunning);
        const { report } = await runPreflight({
          config,
          kubeConfig,
          etcd: etcdAccess(config, opts),
          allowSecretValues: opts.allowSecretValues === true,
        });
        process.stdout.write(opts.json ? renderFindingsJson(report) : renderFindingsTable(report, { width: outputWidth() }));
        return report.exitCode;
      }),
    );
}
