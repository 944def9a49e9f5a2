/** FUNCTION (LOAD, LIST, DELETE, FLUSH, STATS) and FCALL / FCALL_RO, over the Lua runtime. */
import type { Reply } from "../../backend.js";
import { asciiLower, isKeyword } from "../bytes.js";
import type { CommandContext, CommandSpec } from "../context.js";
import { fail } from "../errors.js";
import { globMatch } from "../glob.js";
import { parseInt64 } from "../numbers.js";
import { R } from "../replies.js";

function fcallCommand(readOnly: boolean) {
  return (ctx: CommandContext, argv: readonly string[]): Reply => {
    const name = argv[1]!;
    if (!ctx.scripts.libraries().some((lib) => lib.functions.some((fn) => fn.name === name))) {
      fail("ERR Function not found");
    }
    const numkeys = parseInt64(argv[2]!);
    if (numkeys === null) fail("ERR Bad number of keys provided");
    if (numkeys > BigInt(argv.length - 3)) {
      fail("ERR Number of keys can't be greater than number of args");
    }
    if (numkeys < 0n) fail("ERR Number of keys can't be negative");
    const split = 3 + Number(numkeys);
    return ctx.scripts.callFunction(name, argv.slice(3, split), argv.slice(split), readOnly);
  };
}

function list(ctx: CommandContext, argv: readonly string[]): Reply {
  let withCode = false;
  let pattern: string | undefined;
  for (let i = 2; i < argv.length; i++) {
    if (!withCode && isKeyword(argv[i], "withcode")) withCode = true;
    else if (pattern === undefined && isKeyword(argv[i], "libraryname")) {
      if (i >= argv.length - 1) fail("ERR library name argument was not given");
      pattern = argv[++i]!;
    } else fail(`ERR Unknown argument ${argv[i]}`);
  }
  const libraries = ctx.scripts
    .libraries()
    .filter((lib) => pattern === undefined || globMatch(pattern, lib.name));
  return R.array(
    libraries.map((lib) => {
      const fields: Reply[] = [
        R.bulk("library_name"),
        R.bulk(lib.name),
        R.bulk("engine"),
        R.bulk("LUA"),
        R.bulk("functions"),
        R.array(
          lib.functions.map((fn) =>
            R.array([
              R.bulk("name"),
              R.bulk(fn.name),
              R.bulk("description"),
              fn.description === null ? R.nil() : R.bulk(fn.description),
              R.bulk("flags"),
              R.array(fn.flags.map((flag) => R.status(flag))),
            ]),
          ),
        ),
      ];
      if (withCode) fields.push(R.bulk("library_code"), R.bulk(lib.code));
      return R.array(fields);
    }),
  );
}

function functionCommand(ctx: CommandContext, argv: readonly string[]): Reply {
  const sub = asciiLower(argv[1]!);
  switch (sub) {
    case "load": {
      const replace = argv.length === 4;
      if (replace && !isKeyword(argv[2], "replace")) fail(`ERR Unknown option given: ${argv[2]}`);
      return R.bulk(ctx.scripts.loadLibrary(argv[argv.length - 1]!, replace));
    }
    case "list":
      return list(ctx, argv);
    case "delete":
      if (!ctx.scripts.deleteLibrary(argv[2]!)) fail("ERR Library not found");
      return R.ok();
    case "flush":
      if (argv.length === 3 && !isKeyword(argv[2], "sync") && !isKeyword(argv[2], "async")) {
        fail("ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
      }
      ctx.scripts.flushLibraries();
      return R.ok();
    case "stats": {
      const libraries = ctx.scripts.libraries();
      const functions = libraries.reduce((sum, lib) => sum + lib.functions.length, 0);
      return R.array([
        R.bulk("running_script"),
        R.nil(),
        R.bulk("engines"),
        R.array([
          R.bulk("LUA"),
          R.array([
            R.bulk("libraries_count"),
            R.int(libraries.length),
            R.bulk("functions_count"),
            R.int(functions),
          ]),
        ]),
      ]);
    }
    default:
      // Scripts run synchronously, so none can be running while another command executes.
      if (sub === "kill") return R.error("NOTBUSY No scripts in execution right now.");
      return R.array(
        [
          "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
          "LOAD [REPLACE] <FUNCTION CODE>",
          "DELETE <LIBRARY NAME>",
          "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
          "FLUSH [ASYNC|SYNC]",
          "STATS",
          "KILL",
          "HELP",
        ].map((line) => R.status(line)),
      );
  }
}

export const functionCommands: readonly CommandSpec[] = [
  {
    name: "function",
    arity: -2,
    noScript: true,
    subcommands: { load: -3, list: -2, delete: 3, flush: -2, stats: 2, kill: 2, help: 2 },
    handler: functionCommand,
  },
  { name: "fcall", arity: -3, noScript: true, write: true, handler: fcallCommand(false) },
  { name: "fcall_ro", arity: -3, noScript: true, handler: fcallCommand(true) },
];
