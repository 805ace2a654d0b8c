/** One address or range that moves: every occurrence of `from` in the fields a rewrite owns becomes `to`. */
export interface AddressChange {
  from: string;
  to: string;
}

export function mapThrough(changes: AddressChange[]): (value: string) => string {
  const table = new Map(changes.map((c) => [c.from, c.to]));
  return (value) => table.get(value) ?? value;
}
