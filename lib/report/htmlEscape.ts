/** Text and attribute values for hand-built HTML/SVG: every interpolated value goes through `esc`. */
export function esc(value: string | number): string {
  return String(value).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}
