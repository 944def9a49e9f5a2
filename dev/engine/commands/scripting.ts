/** EVAL, EVALSHA, their _RO variants, SCRIPT, and the transaction verbs the engine refuses. */
import type { Reply } from "../../backend.js";
import { asciiLower } from "../bytes.js";
import type { CommandContext, CommandSpec } from "../context.js";
import { Errors, fail } from "../errors.js";
import { R } from "../replies.js";
import { intArg } from "./util.js";

function evalCommand(bySha: boolean, readOnly: boolean) {
  return (ctx: CommandContext, argv: readonly string[]): Reply => {
    const script = argv[1]!;
    // A SHA of the wrong length can never match, so Redis answers NOSCRIPT before anything else.
    if (bySha && script.length !== 40) fail(Errors.noScript);
    const numkeys = intArg(argv[2]);
    if (numkeys > BigInt(argv.length - 3))
      fail("ERR Number of keys can't be greater than number of args");
    if (numkeys < 0n) fail("ERR Number of keys can't be negative");
    const split = 3 + Number(numkeys);
    const source = bySha ? { sha: script } : { body: script };
    return ctx.scripts.run(source, argv.slice(3, split), argv.slice(split), readOnly);
  };
}

/** Subcommand → Redis arity (counting `SCRIPT` and the subcommand). */
export const scriptSubcommands: Readonly<Record<string, number>> = {
  load: 3,
  exists: -3,
  flush: -2,
  kill: 2,
  help: 2,
};

function script(ctx: CommandContext, argv: readonly string[]): Reply {
  const sub = asciiLower(argv[1]!);
  switch (sub) {
    case "load":
      return R.bulk(ctx.scripts.load(argv[2]!));
    case "exists":
      return R.array(argv.slice(2).map((sha) => R.int(ctx.scripts.exists(sha))));
    case "flush": {
      const mode = argv[2] === undefined ? "" : asciiLower(argv[2]);
      if (argv.length > 3 || (argv.length === 3 && mode !== "sync" && mode !== "async")) {
        fail("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
      }
      ctx.scripts.flush();
      return R.ok();
    }
    case "kill":
      // Scripts run synchronously, so none can be running while another command executes.
      return R.error("NOTBUSY No scripts in execution right now.");
    default:
      return R.array(
        [
          "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
          "EXISTS <sha1> [<sha1> ...]",
          "FLUSH [ASYNC|SYNC]",
          "KILL",
          "LOAD <script>",
          "HELP",
        ].map((line) => R.status(line)),
      );
  }
}

function unsupportedTransactionVerb(name: string) {
  return (): Reply =>
    fail(
      `ERR ${name.toUpperCase()} is not supported as a single command by the embedded engine; use a transaction`,
    );
}

export const scriptingCommands: readonly CommandSpec[] = [
  { name: "eval", arity: -3, noScript: true, handler: evalCommand(false, false) },
  { name: "evalsha", arity: -3, noScript: true, handler: evalCommand(true, false) },
  { name: "eval_ro", arity: -3, noScript: true, handler: evalCommand(false, true) },
  { name: "evalsha_ro", arity: -3, noScript: true, handler: evalCommand(true, true) },
  { name: "script", arity: -2, noScript: true, handler: script },
  ...["multi", "exec", "discard", "watch", "unwatch"].map(
    (name): CommandSpec => ({
      name,
      arity: name === "watch" ? -2 : 1,
      noScript: true,
      noMulti: true,
      handler: unsupportedTransactionVerb(name),
    }),
  ),
];
