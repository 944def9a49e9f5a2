/** PUBLISH and PUBSUB over the engine's in-process channel registry. */
import type { Reply } from "../../backend.js";
import { asciiLower } from "../bytes.js";
import type { CommandContext, CommandSpec } from "../context.js";
import { globMatch } from "../glob.js";
import { R } from "../replies.js";

function pubsub(ctx: CommandContext, argv: readonly string[]): Reply {
  const { channels } = ctx;
  switch (asciiLower(argv[1]!)) {
    case "channels": {
      const pattern = argv[2];
      const names = channels.activeChannels();
      return R.bulks(pattern === undefined ? names : names.filter((n) => globMatch(pattern, n)));
    }
    case "numsub":
      return R.array(
        argv.slice(2).flatMap((name) => [R.bulk(name), R.int(channels.subscriberCount(name))]),
      );
    default:
      return R.int(channels.patternCount);
  }
}

export const pubsubCommands: CommandSpec[] = [
  {
    name: "publish",
    arity: 3,
    handler: (ctx, argv) => R.int(ctx.channels.publish(argv[1]!, argv[2]!)),
  },
  {
    name: "pubsub",
    arity: -2,
    subcommands: { channels: -2, numsub: -2, numpat: 2 },
    handler: pubsub,
  },
];
