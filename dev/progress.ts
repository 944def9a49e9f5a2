/**
 * A one-line progress bar for long runs (demo, bench, chaos). On a terminal it redraws in place;
 * elsewhere (CI logs) it prints a line at every tenth so that logs stay short.
 */
export interface Progress {
  /** Sets the number of finished units (0..total). */
  update(done: number): void;
  /** Completes the bar and moves to a new line. */
  finish(): void;
}

export function progressBar(label: string, total: number, stream = process.stderr): Progress {
  const width = 30;
  const interactive = Boolean(stream.isTTY) && process.env.CI !== "true";
  let lastTenth = -1;
  let finished = false;
  const render = (done: number) => {
    const ratio = total === 0 ? 1 : Math.min(1, done / total);
    if (interactive) {
      const filled = Math.round(ratio * width);
      stream.write(
        `\r${label} [${"#".repeat(filled)}${".".repeat(width - filled)}] ${done}/${total}`,
      );
      return;
    }
    const tenth = Math.floor(ratio * 10);
    if (tenth !== lastTenth) {
      lastTenth = tenth;
      stream.write(`${label}: ${done}/${total} (${tenth * 10}%)\n`);
    }
  };
  return {
    update: (done) => {
      if (!finished) render(done);
    },
    finish: () => {
      if (finished) return;
      render(total);
      finished = true;
      if (interactive) stream.write("\n");
    },
  };
}
