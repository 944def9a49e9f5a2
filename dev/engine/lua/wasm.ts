/**
 * Direct access to the Lua 5.4 C API compiled into wasmoon's WebAssembly module. We bypass
 * wasmoon's high-level wrappers because they convert strings through UTF-8 (not binary-safe)
 * and Lua integers through JS numbers (not 64-bit safe).
 */

/** The raw exports we use. Pointers and states are numbers; Lua integers are bigints. */
export interface LuaApi {
  HEAPU8: Uint8Array;
  HEAPU32: Uint32Array;
  _malloc(size: number): number;
  _free(ptr: number): void;
  addFunction(fn: (...args: number[]) => unknown, signature: string): number;
  removeFunction(ptr: number): void;
  _luaL_newstate(): number;
  _luaL_openlibs(L: number): void;
  _lua_close(L: number): void;
  _lua_gettop(L: number): number;
  _lua_settop(L: number, index: number): void;
  _lua_checkstack(L: number, n: number): number;
  _lua_type(L: number, index: number): number;
  _lua_isinteger(L: number, index: number): number;
  _lua_tointegerx(L: number, index: number, isnum: number): bigint;
  _lua_tonumberx(L: number, index: number, isnum: number): number;
  _lua_toboolean(L: number, index: number): number;
  _lua_tolstring(L: number, index: number, lenPtr: number): number;
  _lua_pushnil(L: number): void;
  _lua_pushboolean(L: number, value: number): void;
  _lua_pushinteger(L: number, value: bigint): void;
  _lua_pushnumber(L: number, value: number): void;
  _lua_pushlstring(L: number, ptr: number, len: number): number;
  _lua_pushlightuserdata(L: number, ptr: number): void;
  _lua_pushcclosure(L: number, fn: number, upvalues: number): void;
  _lua_pushvalue(L: number, index: number): void;
  _lua_createtable(L: number, narr: number, nrec: number): void;
  _lua_rawget(L: number, index: number): number;
  _lua_rawgeti(L: number, index: number, n: bigint): number;
  _lua_rawset(L: number, index: number): void;
  _lua_rawseti(L: number, index: number, n: bigint): void;
  _lua_rotate(L: number, index: number, n: number): void;
  _lua_callk(L: number, nargs: number, nresults: number, ctx: number, k: number): void;
  _lua_pcallk(
    L: number,
    nargs: number,
    nresults: number,
    msgh: number,
    ctx: number,
    k: number,
  ): number;
  _lua_error(L: number): number;
  _lua_sethook(L: number, fn: number, mask: number, count: number): void;
  _luaL_ref(L: number, table: number): number;
  _luaL_unref(L: number, table: number, ref: number): void;
  _luaL_loadbufferx(L: number, buf: number, size: number, name: number, mode: number): number;
}

export const LUA_REGISTRYINDEX = -1001000;
export const LUA_MULTRET = -1;
export const LUA_MASKCOUNT = 8;

export const LuaType = {
  None: -1,
  Nil: 0,
  Boolean: 1,
  LightUserdata: 2,
  Number: 3,
  String: 4,
  Table: 5,
  Function: 6,
  Userdata: 7,
  Thread: 8,
} as const;

const REQUIRED = [
  "_malloc",
  "_free",
  "addFunction",
  "removeFunction",
  "_luaL_newstate",
  "_lua_pcallk",
  "_lua_tolstring",
  "_lua_pushlstring",
  "_lua_rawgeti",
  "_luaL_loadbufferx",
] as const;

function isLuaApi(value: unknown): value is LuaApi {
  if (typeof value !== "object" || value === null) return false;
  const record = value as Record<string, unknown>;
  return (
    REQUIRED.every((name) => typeof record[name] === "function") &&
    record.HEAPU8 instanceof Uint8Array
  );
}

let shared: Promise<LuaApi> | undefined;

/**
 * The process-wide WebAssembly Lua module. Engines share it, each with its own lua_State (states
 * are fully independent), so creating an engine does not recompile the module.
 */
export function loadLuaApi(): Promise<LuaApi> {
  shared ??= instantiateLuaApi().catch((error: unknown) => {
    shared = undefined;
    throw error;
  });
  return shared;
}

async function instantiateLuaApi(): Promise<LuaApi> {
  let wasmoon: typeof import("wasmoon");
  try {
    wasmoon = await import("wasmoon");
  } catch (cause) {
    // wasmoon is an optional dependency: npm installs it, unless told to omit optional ones.
    throw new Error(
      "the embedded engine needs edgelock's optional dependency 'wasmoon', which is not " +
        "installed (npm install -D wasmoon, or use a Redis: install redis-server or set REDIS_URL)",
      { cause },
    );
  }
  const factory = new wasmoon.LuaFactory();
  const { loaded, exports } = await withRawExports(() => factory.getLuaModule());
  const api: unknown = loaded.module;
  if (!isLuaApi(api))
    throw new Error("unsupported wasmoon build: the Lua C API exports are missing");
  return exports === undefined ? api : withDirectCalls(api, exports);
}

/**
 * Runs `load` (which instantiates wasmoon's module) while watching WebAssembly.instantiate, and
 * returns the Lua instance's raw exports with its result. wasmoon's build wraps every exported C
 * function in an assertion wrapper (a template string and an `apply` per call); a lock script
 * makes a few hundred C API calls, and calling the exports directly saves about a tenth of an
 * EVALSHA (bench/micro/engine-evalsha.ts). Without them, the wrapped functions still work.
 */
async function withRawExports<T>(
  load: () => Promise<T>,
): Promise<{ loaded: T; exports: WebAssembly.Exports | undefined }> {
  const original = WebAssembly.instantiate;
  let exports: WebAssembly.Exports | undefined;
  const watching = (async (...args: Parameters<typeof original>) => {
    const result: unknown = await Reflect.apply(original, WebAssembly, args);
    const instance =
      result instanceof WebAssembly.Instance ? result : (result as { instance?: unknown }).instance;
    if (instance instanceof WebAssembly.Instance && "lua_settop" in instance.exports) {
      exports ??= instance.exports;
    }
    return result;
  }) as typeof original;
  WebAssembly.instantiate = watching;
  try {
    return { loaded: await load(), exports };
  } finally {
    if (WebAssembly.instantiate === watching) WebAssembly.instantiate = original;
  }
}

/** The API with each `_lua*` function replaced by the raw export of the same name. */
function withDirectCalls(api: LuaApi, exports: WebAssembly.Exports): LuaApi {
  const direct: Record<string, unknown> = {};
  for (const name of Object.keys(exports)) {
    const fn = exports[name];
    if (name.startsWith("lua") && typeof fn === "function") direct[`_${name}`] = fn;
  }
  return Object.assign(Object.create(api) as LuaApi, direct);
}
