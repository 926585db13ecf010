/**
 * edge-offload ships ES modules only. A CommonJS `require()` of it lands here (the `require` condition of
 * the package's exports): where the runtime can require an ES module synchronously (Node 20.19+ and 22.12+,
 * Bun, Deno) this hands back the very same module instance `import` gets; elsewhere the runtime's error is
 * replaced by one that says what to do instead.
 */
module.exports = function load(requireFrom, path, name) {
  try {
    return requireFrom(path);
  } catch (error) {
    const code = error?.code;
    if (code !== "ERR_REQUIRE_ESM" && code !== "ERR_REQUIRE_ASYNC_MODULE") throw error;
    throw new Error(
      `${name} is an ES module and this runtime cannot require() it: ` +
        `use \`await import("${name}")\` from CommonJS, ` +
        "or Node 22.12+ where require() loads ES modules.",
      { cause: error },
    );
  }
};
