/** One thing the gate found: a reason to fail, or a note for the reviewer that does not fail the gate. */
export interface GateReason {
  /** Stable SCREAMING_SNAKE code, e.g. "SERVICE_IP_DIFFERS". */
  code: string;
  /** What the reason is about: a URN, "Service ns/name", "Node name" or "preview". */
  object: string;
  message: string;
}
