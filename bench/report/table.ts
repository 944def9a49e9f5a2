/** Plain-text tables for the terminal: left-aligned text, right-aligned numbers. */

export type Cell = string | number;

/** Formats `value` with `digits` decimals; "-" for NaN or infinity. */
export function fixed(value: number, digits: number): string {
  return Number.isFinite(value) ? value.toFixed(digits) : "-";
}

export function formatTable(
  headers: readonly string[],
  rows: readonly (readonly Cell[])[],
): string {
  const text = rows.map((row) => row.map((cell) => String(cell)));
  const numeric = headers.map((_, column) =>
    rows.every(
      (row) => typeof row[column] === "number" || /^[-\d.%/ ]+$/.test(String(row[column])),
    ),
  );
  const widths = headers.map((header, column) =>
    Math.max(header.length, ...text.map((row) => (row[column] ?? "").length)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) =>
        numeric[column] ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!),
      )
      .join("  ")
      .trimEnd();
  return [line(headers), line(widths.map((width) => "-".repeat(width))), ...text.map(line)].join(
    "\n",
  );
}
