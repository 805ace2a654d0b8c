/**
 * The look of every page cidr-migration writes (the report, the fleet summary): inline CSS and a Content-Security-Policy
 * of `default-src 'none'`, so a page never fetches anything and opening it never touches the network.
 */
export const REPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

export const REPORT_CSS = `
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; padding: 24px 32px 48px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #111827; background: #f9fafb; }
header { border-bottom: 3px solid #2563eb; margin-bottom: 20px; padding-bottom: 12px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 28px 0 10px; }
.meta { color: #6b7280; margin: 0; }
section { background: #fff; border: 1px solid #e5e7eb; border-radius: 8px; padding: 4px 20px 16px; margin: 0 0 18px; }
dl.summary { display: grid; grid-template-columns: max-content 1fr; gap: 4px 18px; margin: 12px 0; }
dl.summary dt { color: #6b7280; }
dl.summary dd { margin: 0; font-variant-numeric: tabular-nums; }
.figures { display: flex; gap: 16px; flex-wrap: wrap; margin: 12px 0 4px; }
.figure { border: 1px solid #e5e7eb; border-radius: 6px; padding: 8px 14px; min-width: 170px; }
.figure b { display: block; font-size: 20px; }
.figure span { color: #6b7280; font-size: 12px; }
.chart { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; margin: 8px 0; font-variant-numeric: tabular-nums; }
th, td { text-align: left; padding: 5px 10px; border-bottom: 1px solid #e5e7eb; vertical-align: top; }
th { background: #f3f4f6; font-weight: 600; }
td.num, th.num { text-align: right; }
table#phases { width: auto; min-width: 640px; }
code, td.mono { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12.5px; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600; }
.badge.blocker { background: #fee2e2; color: #991b1b; }
.badge.warning { background: #fef3c7; color: #92400e; }
.badge.info { background: #e0e7ff; color: #3730a3; }
.badge.recreate, .badge.move { background: #dbeafe; color: #1e40af; }
.badge.unchanged { background: #f3f4f6; color: #4b5563; }
.verdict { font-weight: 600; }
.verdict.ok { color: #166534; }
.verdict.bad { color: #991b1b; }
.empty { color: #6b7280; font-style: italic; }
details > summary { cursor: pointer; margin: 10px 0; color: #1d4ed8; }
@media print { body { background: #fff; padding: 0; } section { break-inside: avoid; border: none; } }
`;
