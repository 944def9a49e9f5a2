/** RESP2 client for a real Redis, exposed as a `Backend`. */

export { commandName, isBlockingCommand, sharedConnectionRefusal } from "./command-policy.js";
export { RespConnection, RespConnectionError, type RespConnectOptions } from "./connection.js";
export { RespParser, RespProtocolError } from "./parser.js";
export { RespPool, type RespPoolOptions } from "./pool.js";
export { encodeCommands, encodeReply } from "./protocol.js";
export { createRedisUrlBackend, type RedisUrlBackendOptions } from "./redis-backend.js";
export { describeAddress, parseRedisUrl, type RedisConnectionSettings } from "./redis-url.js";
