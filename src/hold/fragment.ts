/**
 * Lua fragments that say what they need. A script's Lua is composed of fragments (the server
 * clock, the waiter queue, the push hand-off…) that read locals they do not define: the script's
 * keys and arguments, or locals that an earlier fragment or the script's own text defines. Each
 * fragment declares them beside its text (`needs`), and the locals it defines for what follows
 * (`provides`); the script catalogue checks every script against the declarations of the
 * fragments in it (checkScriptNeeds in script.ts), so that a script composed in the wrong order,
 * or without a key or argument a fragment reads, fails the tests instead of reading nil.
 *
 * A declaration costs a Worker nothing: it is a call marked pure whose result is unused, which a
 * bundler drops (with its arguments) and which runs only where the source runs unbundled, as in
 * the tests. The composed Lua is untouched, so declaring cannot change a script's text. Scripts
 * are built once, as their modules load, so the list does not grow where it is kept. Declare
 * only with names and literals (no spread, no property read): a bundler keeps an argument it
 * cannot prove free of effects.
 */

/** A fragment's declaration. */
export interface LuaFragment {
  /** How errors name it: its builder, e.g. "learnHold". */
  readonly name: string;
  /** Its text, or a function that builds it again (a builder's call with the same arguments). */
  readonly lua: string | (() => string);
  /**
   * Locals its text reads and does not define: keys and arguments of the script by name, or
   * locals defined before it (`now`, `waiter`, a local `timeout`…). An undefined entry stands
   * for an optional name the builder was not given (it reads none then).
   */
  readonly needs?: readonly (string | undefined)[];
  /** Locals its text defines for the Lua after it (`now`, `waiter`…). */
  readonly provides?: readonly string[];
}

/**
 * The fragments declared so far (in the tests: every fragment of every script defined). Declare
 * one with a statement marked pure, so that bundles drop it:
 *
 *     /* @__PURE__ *\/ LUA_FRAGMENTS.push({ name: "learnHold", lua: () => learnHold(statsKey), needs: [statsKey, "now"] });
 */
export const LUA_FRAGMENTS: LuaFragment[] = [];
