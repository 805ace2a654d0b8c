/**
 * How every node step runs its generated script over SSH (lib/remote/sshExec.ts): the SSH session's command is
 * this short POSIX-sh command and the script arrives on stdin.
 *
 * Why not the script as the command itself: sshd runs a command through the login user's shell, which may be dash
 * (no `set -o pipefail`), and a session's command line is visible to every user of the node in `ps` for as long
 * as the step runs (the kubeadm-rejoin script embeds a bootstrap token; only `kubeadm join` itself still takes it
 * on its command line, for the seconds the join lasts). Here the script is written to a private temp file
 * (mktemp creates it mode 0600), run by bash, and removed on exit, whatever the login shell. The script's exit
 * status and output are the command's.
 */
export const RUN_SCRIPT_FROM_STDIN = `set -eu; script=$(mktemp); trap 'rm -f -- "$script"' EXIT; cat > "$script"; bash "$script"`;
