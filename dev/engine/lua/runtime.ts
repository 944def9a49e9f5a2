/**
 * The scripting runtime: one long-lived Lua 5.4 state (wasmoon's WebAssembly build) driven through
 * the raw C API, a script cache keyed by SHA-1, and the value conversions between Redis replies
 * and Lua values that Redis 7 defines.
 */
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { performance } from "node:perf_hooks";
import type { Reply } from "../../backend.js";
import { binaryToText, textToBinary } from "../bytes.js";
import type { FunctionLibrary, ScriptHost } from "../context.js";
import { Errors, fail } from "../errors.js";
import { formatG, truncateToInt64 } from "../numbers.js";
import { R } from "../replies.js";
import { CJSON } from "./cjson.js";
import { PRELUDE } from "./prelude.js";
import { parseShebang, type ScriptFlags } from "./shebang.js";
import {
  LUA_MASKCOUNT,
  LUA_MULTRET,
  LUA_REGISTRYINDEX,
  type LuaApi,
  LuaType,
  loadLuaApi,
} from "./wasm.js";

/** What the runtime needs from the engine. */
export interface LuaHost {
  /** Executes a command for redis.call/pcall; script-specific refusals come back as error replies. */
  call(argv: string[], readOnly: boolean): Reply;
  commandExists(name: string): boolean;
  /** Runs `fn` with the clock frozen (Redis evaluates expiry at the script's start time). */
  freezeTime<T>(fn: () => T): T;
}

export interface LuaRuntimeOptions {
  /** Scripts running longer than this are aborted with a BUSY error. */
  readonly timeLimitMs: number;
}

interface CachedScript {
  readonly ref: bigint;
  readonly flags: ScriptFlags;
}

interface Internals {
  readonly handler: bigint;
  readonly compile: bigint;
  readonly run: bigint;
  readonly killed: bigint;
  readonly loadLibrary: bigint;
  readonly callFunction: bigint;
}

interface LoadedFunction {
  readonly name: string;
  readonly ref: bigint;
  readonly flags: readonly string[];
  readonly description: string | null;
  readonly library: string;
}

interface LoadedLibrary extends FunctionLibrary {
  readonly functions: readonly LoadedFunction[];
}

const LIBRARY_NAME = /^[A-Za-z0-9_]+$/;

const MAX_SAFE = 2n ** 53n;

/** Instructions between two time-limit checks. */
const HOOK_INTERVAL = 100_000;
/** Nesting limit when converting a returned table, so a self-referencing table cannot recurse forever. */
const MAX_REPLY_DEPTH = 1000;

export function sha1hex(binary: string): string {
  return createHash("sha1").update(binary, "latin1").digest("hex");
}

/** The `#!lua name=<library>` header FUNCTION LOAD requires; the body keeps the line count. */
function parseLibraryHeader(code: string): { name: string; body: string } {
  if (!code.startsWith("#!")) fail("ERR Missing library metadata");
  const end = code.indexOf("\n");
  const header = end < 0 ? code : code.slice(0, end);
  const [engine = "", ...options] = header
    .slice(2)
    .split(" ")
    .filter((part) => part !== "");
  let name: string | undefined;
  for (const option of options) {
    if (!option.startsWith("name=")) fail(`ERR Invalid metadata value given: ${option}`);
    name = option.slice("name=".length);
  }
  if (name === undefined) fail("ERR Library name was not given");
  if (engine.toLowerCase() !== "lua") fail(`ERR Engine '${engine}' not found`);
  if (!LIBRARY_NAME.test(name)) {
    fail(
      "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long",
    );
  }
  return { name, body: end < 0 ? "" : code.slice(end) };
}

/** Redis's luaPushErrorBuff: an error message without a "CODE " prefix gets the generic ERR code. */
function luaErrorText(message: string): string {
  const trimmed = message.replace(/^[\r\n]+|[\r\n]+$/g, "");
  return trimmed.includes(" ") ? trimmed : `ERR ${trimmed}`;
}

/** Error and status replies cannot contain newlines in RESP; Redis replaces them with spaces. */
function singleLine(text: string): string {
  return text.replace(/[\r\n]/g, " ");
}

export class LuaRuntime implements ScriptHost {
  private readonly L: number;
  private readonly lenPtr: number;
  private scratchPtr = 0;
  private scratchSize = 0;
  private heap: Buffer;
  private readonly functions: number[] = [];
  private readonly scripts = new Map<string, CachedScript>();
  private readonly libraryByName = new Map<string, LoadedLibrary>();
  private readonly functionByName = new Map<string, LoadedFunction>();
  private readonly internals: Internals;
  /** Whether the running script may only read (EVAL_RO or a `no-writes` shebang). */
  private readOnly = false;
  /** performance.now() value after which the running script is killed. */
  private deadline = Number.POSITIVE_INFINITY;
  private closed = false;

  static async create(host: LuaHost, options: LuaRuntimeOptions): Promise<LuaRuntime> {
    return new LuaRuntime(await loadLuaApi(), host, options);
  }

  private constructor(
    private readonly api: LuaApi,
    private readonly host: LuaHost,
    private readonly options: LuaRuntimeOptions,
  ) {
    this.heap = Buffer.from(api.HEAPU8.buffer);
    this.lenPtr = api._malloc(8);
    this.L = api._luaL_newstate();
    if (this.L === 0) throw new Error("could not create a Lua state");
    api._luaL_openlibs(this.L);
    this.internals = this.boot();
    const hook = this.register((_L: number) => this.onHook(_L), "vii");
    api._lua_sethook(this.L, hook, LUA_MASKCOUNT, HOOK_INTERVAL);
  }

  // ---- ScriptHost -------------------------------------------------------------------------

  run(
    source: { readonly body: string } | { readonly sha: string },
    keys: readonly string[],
    args: readonly string[],
    readOnly: boolean,
  ): Reply {
    this.assertOpen();
    let sha: string;
    let script: CachedScript | undefined;
    if ("sha" in source) {
      sha = source.sha.toLowerCase();
      script = this.scripts.get(sha);
      if (script === undefined) fail(Errors.noScript);
    } else {
      sha = sha1hex(source.body);
      script = this.scripts.get(sha) ?? this.compile(sha, source.body);
    }
    if (readOnly && script.flags.shebang && !script.flags.noWrites) {
      fail("ERR Can not execute a script with write flag using *_ro command.");
    }
    const ro = readOnly || script.flags.noWrites;
    const ref = script.ref;
    return this.host.freezeTime(() => this.invoke(ref, sha, keys, args, ro, this.internals.run));
  }

  load(body: string): string {
    this.assertOpen();
    const sha = sha1hex(body);
    if (!this.scripts.has(sha)) this.compile(sha, body);
    return sha;
  }

  exists(sha: string): boolean {
    return this.scripts.has(sha.toLowerCase());
  }

  flush(): void {
    for (const script of this.scripts.values()) {
      this.api._luaL_unref(this.L, LUA_REGISTRYINDEX, Number(script.ref));
    }
    this.scripts.clear();
  }

  loadLibrary(code: string, replace: boolean): string {
    this.assertOpen();
    const { name, body } = parseLibraryHeader(code);
    const previous = this.libraryByName.get(name);
    if (previous !== undefined && !replace) fail(`ERR Library '${name}' already exists`);
    const functions = this.runLibrary(name, body);
    for (const fn of functions) {
      const owner = this.functionByName.get(fn.name)?.library;
      if (owner !== undefined && owner !== name) {
        this.release(functions);
        fail(`ERR Function ${fn.name} already exists`);
      }
    }
    if (previous !== undefined) this.dropLibrary(previous);
    const library: LoadedLibrary = { name, code, functions };
    this.libraryByName.set(name, library);
    for (const fn of functions) this.functionByName.set(fn.name, fn);
    return name;
  }

  callFunction(
    name: string,
    keys: readonly string[],
    args: readonly string[],
    readOnly: boolean,
  ): Reply {
    this.assertOpen();
    const fn = this.functionByName.get(name);
    if (fn === undefined) fail("ERR Function not found");
    const noWrites = fn.flags.includes("no-writes");
    if (readOnly && !noWrites) {
      fail("ERR Can not execute a script with write flag using *_ro command.");
    }
    return this.host.freezeTime(() =>
      this.invoke(fn.ref, name, keys, args, readOnly || noWrites, this.internals.callFunction),
    );
  }

  deleteLibrary(name: string): boolean {
    const library = this.libraryByName.get(name);
    if (library === undefined) return false;
    this.dropLibrary(library);
    return true;
  }

  flushLibraries(): void {
    for (const library of [...this.libraryByName.values()]) this.dropLibrary(library);
  }

  libraries(): readonly FunctionLibrary[] {
    return [...this.libraryByName.values()];
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    const api = this.api;
    api._lua_close(this.L);
    for (const fn of this.functions) api.removeFunction(fn);
    if (this.scratchPtr !== 0) api._free(this.scratchPtr);
    api._free(this.lenPtr);
    this.scripts.clear();
  }

  // ---- setup ------------------------------------------------------------------------------

  /** Loads cjson and the prelude, registers the JS functions and keeps references to internals. */
  private boot(): Internals {
    const { api, L } = this;
    const call = this.register((state: number) => this.redisCall(state, true), "ii");
    const pcall = this.register((state: number) => this.redisCall(state, false), "ii");
    const helper = this.register((state: number) => this.helper(state), "ii");
    const trampoline = this.register((state: number) => this.trampoline(state), "ii");
    const wrap = this.register((state: number) => {
      api._lua_settop(state, 1);
      api._lua_pushcclosure(state, trampoline, 1);
      return 1;
    }, "ii");

    this.loadChunk(CJSON, "=cjson");
    api._lua_pushlightuserdata(L, 0);
    this.pcallOrThrow(1, 1, "cjson");
    const cjsonIndex = api._lua_gettop(L);

    this.loadChunk(PRELUDE, "=prelude");
    api._lua_pushcclosure(L, call, 0);
    api._lua_pushcclosure(L, pcall, 0);
    api._lua_pushcclosure(L, helper, 0);
    api._lua_pushvalue(L, cjsonIndex);
    // The kill sentinel: a table so that no script can forge it with a string.
    api._lua_createtable(L, 0, 1);
    this.pushBinary(L, "err");
    this.pushBinary(
      L,
      `BUSY Script killed by the embedded engine after running for more than ${this.options.timeLimitMs} ms`,
    );
    api._lua_rawset(L, -3);
    api._lua_pushcclosure(L, wrap, 0);
    this.pcallOrThrow(6, 1, "prelude");
    const table = api._lua_gettop(L);
    const field = (name: string): bigint => {
      this.pushBinary(L, name);
      api._lua_rawget(L, table);
      return BigInt(api._luaL_ref(L, LUA_REGISTRYINDEX));
    };
    const internals: Internals = {
      handler: field("handler"),
      compile: field("compile"),
      run: field("run"),
      killed: field("killed"),
      loadLibrary: field("load_library"),
      callFunction: field("call_function"),
    };
    api._lua_settop(L, 0);
    return internals;
  }

  private register(fn: (...args: number[]) => unknown, signature: string): number {
    const ptr = this.api.addFunction(fn, signature);
    this.functions.push(ptr);
    return ptr;
  }

  private loadChunk(source: string, name: string): void {
    const { api, L } = this;
    const code = this.toHeap(textToBinary(source));
    const namePtr = this.cString(name);
    const modePtr = this.cString("t");
    const status = api._luaL_loadbufferx(L, code.ptr, code.len, namePtr, modePtr);
    api._free(code.ptr);
    api._free(namePtr);
    api._free(modePtr);
    if (status !== 0) throw new Error(`Lua ${name} failed to compile: ${this.readText(L, -1)}`);
  }

  private pcallOrThrow(nargs: number, nresults: number, what: string): void {
    const status = this.api._lua_pcallk(this.L, nargs, nresults, 0, 0, 0);
    if (status !== 0) throw new Error(`Lua ${what} failed: ${this.readText(this.L, -1)}`);
  }

  // ---- running scripts --------------------------------------------------------------------

  private compile(sha: string, body: string): CachedScript {
    const parsed = parseShebang(body);
    if (!parsed.ok) fail(parsed.error);
    const { api, L } = this;
    api._lua_settop(L, 0);
    api._lua_rawgeti(L, LUA_REGISTRYINDEX, this.internals.compile);
    this.pushBinary(L, parsed.code);
    const status = api._lua_pcallk(L, 1, 2, 0, 0, 0);
    if (status !== 0 || api._lua_type(L, 1) !== LuaType.Function) {
      const message = this.readText(L, -1);
      api._lua_settop(L, 0);
      fail(`ERR Error compiling script (new function): ${singleLine(message)}`);
    }
    api._lua_settop(L, 1);
    const script: CachedScript = {
      ref: BigInt(api._luaL_ref(L, LUA_REGISTRYINDEX)),
      flags: parsed.flags,
    };
    this.scripts.set(sha, script);
    return script;
  }

  /** Runs the function at registry `ref` through the prelude's `runner` (EVAL or FCALL style). */
  private invoke(
    ref: bigint,
    name: string,
    keys: readonly string[],
    args: readonly string[],
    readOnly: boolean,
    runner: bigint,
  ): Reply {
    const { api, L } = this;
    api._lua_settop(L, 0);
    api._lua_rawgeti(L, LUA_REGISTRYINDEX, this.internals.handler);
    api._lua_rawgeti(L, LUA_REGISTRYINDEX, runner);
    api._lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
    this.pushStringArray(L, keys);
    this.pushStringArray(L, args);
    this.readOnly = readOnly;
    this.deadline = performance.now() + this.options.timeLimitMs;
    let status: number;
    try {
      status = api._lua_pcallk(L, 3, 1, 1, 0, 0);
    } finally {
      this.deadline = Number.POSITIVE_INFINITY;
      this.readOnly = false;
    }
    const reply = status === 0 ? this.toReply(L, api._lua_gettop(L), 0) : this.errorReply(L, name);
    api._lua_settop(L, 0);
    return reply;
  }

  /** Runs a library body with register_function; returns its functions (refs held). */
  private runLibrary(library: string, body: string): LoadedFunction[] {
    // Runtime errors while loading are reported without a position, as Redis does.
    const { api, L } = this;
    api._lua_settop(L, 0);
    api._lua_rawgeti(L, LUA_REGISTRYINDEX, this.internals.handler);
    api._lua_rawgeti(L, LUA_REGISTRYINDEX, this.internals.loadLibrary);
    this.pushBinary(L, body);
    this.deadline = performance.now() + this.options.timeLimitMs;
    let status: number;
    try {
      status = api._lua_pcallk(L, 1, 2, 1, 0, 0);
    } finally {
      this.deadline = Number.POSITIVE_INFINITY;
    }
    if (status !== 0) {
      const top = api._lua_gettop(L);
      const message =
        api._lua_type(L, top) === LuaType.Table
          ? (this.field(L, top, "err") ?? "ERR unknown error")
          : this.readText(L, top);
      api._lua_settop(L, 0);
      fail(`ERR Error registering functions: ${singleLine(message)}`);
    }
    if (api._lua_type(L, 2) !== LuaType.Table) {
      const message = this.readText(L, 3);
      api._lua_settop(L, 0);
      fail(`ERR Error compiling function: ${singleLine(message)}`);
    }
    const functions: LoadedFunction[] = [];
    for (let i = 1; ; i++) {
      api._lua_rawgeti(L, 2, BigInt(i));
      if (api._lua_type(L, -1) !== LuaType.Table) break;
      const entry = api._lua_gettop(L);
      const name = this.field(L, entry, "name") ?? "";
      const flags = this.field(L, entry, "flags") ?? "";
      const description = this.field(L, entry, "description");
      this.pushBinary(L, "fn");
      api._lua_rawget(L, entry);
      const ref = BigInt(api._luaL_ref(L, LUA_REGISTRYINDEX));
      api._lua_settop(L, entry - 1);
      functions.push({
        name,
        ref,
        flags: flags === "" ? [] : flags.split(","),
        description,
        library,
      });
    }
    api._lua_settop(L, 0);
    if (functions.length === 0) fail("ERR No functions registered");
    return functions;
  }

  private release(functions: readonly LoadedFunction[]): void {
    for (const fn of functions) this.api._luaL_unref(this.L, LUA_REGISTRYINDEX, Number(fn.ref));
  }

  private dropLibrary(library: LoadedLibrary): void {
    this.release(library.functions);
    for (const fn of library.functions) this.functionByName.delete(fn.name);
    this.libraryByName.delete(library.name);
  }

  /** Builds the reply for a failed script from the table the error handler produced. */
  private errorReply(L: number, sha: string): Reply {
    const api = this.api;
    const top = api._lua_gettop(L);
    if (api._lua_type(L, top) !== LuaType.Table) {
      return R.error(`ERR Error running script f_${sha}, ${singleLine(this.readText(L, top))}`);
    }
    const message = this.field(L, top, "err");
    const source = this.field(L, top, "source");
    this.pushBinary(L, "line");
    api._lua_rawget(L, top);
    const line =
      api._lua_type(L, -1) === LuaType.Number ? String(api._lua_tointegerx(L, -1, 0)) : null;
    api._lua_settop(L, top);
    let text = singleLine(message ?? "ERR unknown error");
    if (source !== null && line !== null) text += ` script: ${sha}, on ${source}:${line}.`;
    return R.error(text);
  }

  /** Reads a string field of the table at `index` (raw access), or null. */
  private field(L: number, index: number, name: string): string | null {
    const api = this.api;
    this.pushBinary(L, name);
    api._lua_rawget(L, index);
    const value = api._lua_type(L, -1) === LuaType.String ? this.readBinary(L, -1) : null;
    api._lua_settop(L, -2);
    return value;
  }

  // ---- the JS functions Lua calls ---------------------------------------------------------

  /** redis.call (raise = true) and redis.pcall (raise = false). */
  private redisCall(L: number, raise: boolean): number {
    let reply: Reply;
    try {
      reply = this.executeFromLua(L);
    } catch (error) {
      reply = R.error(`ERR ${error instanceof Error ? error.message : String(error)}`);
    }
    if (reply.type === "error" && raise) {
      this.pushErrorTable(L, reply.message);
      // lua_error unwinds through this JS frame (it throws); it must not be inside a try block.
      return this.api._lua_error(L);
    }
    this.pushReply(L, reply, 0);
    return 1;
  }

  private executeFromLua(L: number): Reply {
    const api = this.api;
    const argc = api._lua_gettop(L);
    if (argc === 0)
      return R.error("ERR Please specify at least one argument for this redis lib call");
    const argv: string[] = [];
    for (let i = 1; i <= argc; i++) {
      const type = api._lua_type(L, i);
      if (type === LuaType.String) {
        argv.push(this.readBinary(L, i));
      } else if (type === LuaType.Number) {
        // Redis (Lua 5.1) holds every number as a double and prints it with %.17g.
        const value = api._lua_isinteger(L, i)
          ? Number(api._lua_tointegerx(L, i, 0))
          : api._lua_tonumberx(L, i, 0);
        argv.push(formatG(value, 17));
      } else {
        return R.error("ERR Lua redis lib command arguments must be strings or integers");
      }
    }
    return this.host.call(argv, this.readOnly);
  }

  /** Small services for the prelude: sha1hex and command lookup. */
  private helper(L: number): number {
    const api = this.api;
    let op = "";
    let arg = "";
    try {
      op = this.readBinary(L, 1);
      arg = api._lua_type(L, 2) === LuaType.String ? this.readBinary(L, 2) : "";
      if (op === "sha1hex") {
        this.pushBinary(L, sha1hex(arg));
      } else {
        api._lua_pushboolean(L, this.host.commandExists(arg) ? 1 : 0);
      }
    } catch {
      api._lua_pushnil(L);
    }
    return 1;
  }

  /**
   * Calls the Lua function held in upvalue 1 with our arguments. Wrapping a Lua helper in this C
   * function keeps the caller's frame alive when a script tail-calls the helper (Lua 5.4 drops
   * the frame of a tail-calling Lua function, not of a C one), so errors still point at the
   * script line, as with Redis's C helpers. Errors propagate straight through (longjmp).
   */
  private trampoline(L: number): number {
    const api = this.api;
    const argc = api._lua_gettop(L);
    api._lua_pushvalue(L, LUA_REGISTRYINDEX - 1);
    api._lua_rotate(L, 1, 1);
    api._lua_callk(L, argc, LUA_MULTRET, 0, 0);
    return api._lua_gettop(L);
  }

  private onHook(L: number): void {
    if (performance.now() <= this.deadline) return;
    this.api._lua_rawgeti(L, LUA_REGISTRYINDEX, this.internals.killed);
    this.api._lua_error(L);
  }

  // ---- conversions ------------------------------------------------------------------------

  /** Redis reply → Lua value, as redis.call returns it. */
  private pushReply(L: number, reply: Reply, depth: number): void {
    const api = this.api;
    api._lua_checkstack(L, 4);
    switch (reply.type) {
      case "status":
        api._lua_createtable(L, 0, 1);
        this.pushBinary(L, "ok");
        this.pushBinary(L, textToBinary(reply.value));
        api._lua_rawset(L, -3);
        return;
      case "error":
        this.pushErrorTable(L, reply.message);
        return;
      case "integer":
        // Redis's Lua holds numbers as doubles: beyond 2^53 an integer reply loses precision.
        if (reply.value > MAX_SAFE || reply.value < -MAX_SAFE)
          api._lua_pushnumber(L, Number(reply.value));
        else api._lua_pushinteger(L, reply.value);
        return;
      case "bulk":
        if (reply.value === null) api._lua_pushboolean(L, 0);
        else this.pushBytes(L, reply.value);
        return;
      case "array": {
        if (reply.value === null || depth > MAX_REPLY_DEPTH) {
          api._lua_pushboolean(L, 0);
          return;
        }
        api._lua_createtable(L, reply.value.length, 0);
        let i = 1n;
        for (const item of reply.value) {
          this.pushReply(L, item, depth + 1);
          api._lua_rawseti(L, -2, i++);
        }
        return;
      }
    }
  }

  private pushErrorTable(L: number, message: string): void {
    const api = this.api;
    api._lua_createtable(L, 0, 1);
    this.pushBinary(L, "err");
    this.pushBinary(L, textToBinary(luaErrorText(message)));
    api._lua_rawset(L, -3);
  }

  /** Lua value at `index` → Redis reply, as a script's return value is converted. */
  private toReply(L: number, index: number, depth: number): Reply {
    const api = this.api;
    switch (api._lua_type(L, index)) {
      case LuaType.String:
        return { type: "bulk", value: this.readBytes(L, index) };
      case LuaType.Number:
        return api._lua_isinteger(L, index)
          ? R.int(api._lua_tointegerx(L, index, 0))
          : R.int(truncateToInt64(api._lua_tonumberx(L, index, 0)));
      case LuaType.Boolean:
        return api._lua_toboolean(L, index) ? R.int(1) : R.nil();
      case LuaType.Table:
        return this.tableToReply(L, index, depth);
      default:
        return R.nil();
    }
  }

  private tableToReply(L: number, index: number, depth: number): Reply {
    const api = this.api;
    if (depth > MAX_REPLY_DEPTH || api._lua_checkstack(L, 4) === 0) {
      return R.error("ERR reached lua stack limit");
    }
    const err = this.field(L, index, "err");
    if (err !== null) return R.error(singleLine(err));
    const ok = this.field(L, index, "ok");
    if (ok !== null) return R.status(singleLine(ok));
    const items: Reply[] = [];
    for (let i = 1n; ; i++) {
      if (api._lua_rawgeti(L, index, i) === LuaType.Nil) {
        api._lua_settop(L, -2);
        break;
      }
      items.push(this.toReply(L, api._lua_gettop(L), depth + 1));
      api._lua_settop(L, -2);
    }
    return R.array(items);
  }

  // ---- strings across the boundary --------------------------------------------------------

  private heapView(): Buffer {
    // Growing wasm memory detaches the old ArrayBuffer (our view's length drops to 0); a length
    // check is cheaper than comparing buffers on every string that crosses.
    if (this.heap.length === 0) this.heap = Buffer.from(this.api.HEAPU8.buffer);
    return this.heap;
  }

  /** The 32-bit unsigned word at `ptr` (e.g. a length lua_tolstring wrote). */
  private readU32(ptr: number): number {
    return this.heapView().readUInt32LE(ptr);
  }

  private scratch(size: number): number {
    if (size > this.scratchSize) {
      if (this.scratchPtr !== 0) this.api._free(this.scratchPtr);
      this.scratchSize = Math.max(size, 256, this.scratchSize * 2);
      this.scratchPtr = this.api._malloc(this.scratchSize);
      if (this.scratchPtr === 0) throw new Error("out of memory in the Lua heap");
    }
    return this.scratchPtr;
  }

  private pushBinary(L: number, value: string): void {
    const ptr = this.scratch(value.length);
    this.heapView().write(value, ptr, value.length, "latin1");
    this.api._lua_pushlstring(L, ptr, value.length);
  }

  private pushBytes(L: number, value: Uint8Array): void {
    const ptr = this.scratch(value.length);
    this.api.HEAPU8.set(value, ptr);
    this.api._lua_pushlstring(L, ptr, value.length);
  }

  private pushStringArray(L: number, values: readonly string[]): void {
    const api = this.api;
    api._lua_createtable(L, values.length, 0);
    let i = 1n;
    for (const value of values) {
      this.pushBinary(L, value);
      api._lua_rawseti(L, -2, i++);
    }
  }

  /** The string at `index` as a binary string (only call on strings: numbers would be converted). */
  private readBinary(L: number, index: number): string {
    const ptr = this.api._lua_tolstring(L, index, this.lenPtr);
    const len = this.readU32(this.lenPtr);
    return this.heapView().toString("latin1", ptr, ptr + len);
  }

  private readBytes(L: number, index: number): Uint8Array {
    const ptr = this.api._lua_tolstring(L, index, this.lenPtr);
    const len = this.readU32(this.lenPtr);
    return this.api.HEAPU8.slice(ptr, ptr + len);
  }

  /** Any value at `index` as text, for diagnostics. */
  private readText(L: number, index: number): string {
    const type = this.api._lua_type(L, index);
    if (type === LuaType.String || type === LuaType.Number)
      return binaryToText(this.readBinary(L, index));
    return `(a ${type === LuaType.Table ? "table" : "non-string"} value)`;
  }

  private toHeap(binary: string): { ptr: number; len: number } {
    const ptr = this.api._malloc(binary.length + 1);
    this.heapView().write(binary, ptr, binary.length, "latin1");
    this.api.HEAPU8[ptr + binary.length] = 0;
    return { ptr, len: binary.length };
  }

  private cString(text: string): number {
    return this.toHeap(textToBinary(text)).ptr;
  }

  private assertOpen(): void {
    if (this.closed) throw new Error("the embedded engine is closed");
  }
}
