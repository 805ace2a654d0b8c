// A throwaway certificate authority for the test bed, made with the openssl CLI:
// etcd, kube-apiserver and their clients all speak TLS with certs it issues.
import { execFile } from "child_process";
import { randomBytes } from "crypto";
import * as fs from "fs";
import * as path from "path";
import { promisify } from "util";

const execFileAsync = promisify(execFile);

export interface IssuedCert { certPath: string; keyPath: string; }

export interface IssueOptions {
    commonName: string;
    organization?: string;
    dnsNames?: string[];
    ipAddresses?: string[];
    usage: "server" | "client" | "both";
}

export interface Pki {
    dir: string;
    caCertPath: string;
    caKeyPath: string;
    issue(name: string, opts: IssueOptions): Promise<IssuedCert>;
}

async function openssl(args: string[], cwd: string): Promise<void> {
    try {
        await execFileAsync("openssl", args, { cwd });
    } catch (err) {
        const e = err as { stderr?: string; message: string };
        throw new Error(`openssl ${args[0]} failed: ${(e.stderr ?? e.message).trim()}`);
    }
}

/** EC P-256 keys: as good as RSA for a test CA, and generated in milliseconds. */
export async function generateKey(keyPath: string, cwd: string = path.dirname(keyPath)): Promise<void> {
    await openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", keyPath], cwd);
    fs.chmodSync(keyPath, 0o600);
}

/** The public half of a key, as PEM "PUBLIC KEY" (kube-apiserver's --service-account-key-file wants it). */
export async function writePublicKey(keyPath: string, publicKeyPath: string): Promise<void> {
    await openssl(["pkey", "-in", keyPath, "-pubout", "-out", publicKeyPath], path.dirname(keyPath));
}

/** openssl -subj syntax; "/" and "=" inside a value would need escaping, so refuse them. */
function subject(commonName: string, organization?: string): string {
    for (const value of [commonName, organization ?? ""]) {
        if (/[/=\\]/.test(value)) throw new Error(`pki: subject value "${value}" must not contain / = or \\`);
    }
    return (organization ? `/O=${organization}` : "") + `/CN=${commonName}`;
}

/** Random serials, so concurrent issue() calls need no shared serial file. */
function randomSerial(): string {
    return "0x" + randomBytes(16).toString("hex").replace(/^[89a-f]/, "1");
}

function extensions(opts: IssueOptions): string {
    const extendedUsage = { server: "serverAuth", client: "clientAuth", both: "serverAuth,clientAuth" }[opts.usage];
    const altNames = [
        ...(opts.dnsNames ?? []).map((name) => `DNS:${name}`),
        ...(opts.ipAddresses ?? []).map((ip) => `IP:${ip}`),
    ];
    const lines = [
        "basicConstraints = critical,CA:FALSE",
        "keyUsage = critical,digitalSignature,keyEncipherment",
        `extendedKeyUsage = ${extendedUsage}`,
        "subjectKeyIdentifier = hash",
        "authorityKeyIdentifier = keyid",
    ];
    if (altNames.length > 0) lines.push(`subjectAltName = ${altNames.join(",")}`);
    return lines.join("\n") + "\n";
}

export async function createPki(dir: string, caName = "cidr-migration-testbed-ca"): Promise<Pki> {
    fs.mkdirSync(dir, { recursive: true });
    const caCertPath = path.join(dir, "ca.crt");
    const caKeyPath = path.join(dir, "ca.key");
    if (!fs.existsSync(caCertPath) || !fs.existsSync(caKeyPath)) {
        await generateKey(caKeyPath, dir);
        await openssl([
            "req", "-x509", "-new", "-key", caKeyPath, "-out", caCertPath, "-days", "30",
            "-subj", subject(caName), "-set_serial", randomSerial(),
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
        ], dir);
    }

    async function issue(name: string, opts: IssueOptions): Promise<IssuedCert> {
        if (!/^[A-Za-z0-9._-]+$/.test(name)) throw new Error(`pki: cert name "${name}" must be a plain file name`);
        const certPath = path.join(dir, `${name}.crt`);
        const keyPath = path.join(dir, `${name}.key`);
        const csrPath = path.join(dir, `${name}.csr`);
        const extPath = path.join(dir, `${name}.ext`);
        await generateKey(keyPath, dir);
        await openssl(["req", "-new", "-key", keyPath, "-out", csrPath, "-subj", subject(opts.commonName, opts.organization)], dir);
        fs.writeFileSync(extPath, extensions(opts));
        await openssl([
            "x509", "-req", "-in", csrPath, "-CA", caCertPath, "-CAkey", caKeyPath, "-set_serial", randomSerial(),
            "-days", "30", "-extfile", extPath, "-out", certPath,
        ], dir);
        fs.rmSync(csrPath, { force: true });
        fs.rmSync(extPath, { force: true });
        return { certPath, keyPath };
    }

    return { dir, caCertPath, caKeyPath, issue };
}
