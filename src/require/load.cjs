'use strict';
// The CommonJS entries (index.cjs, node.cjs: package.json "exports" > "require"). kilnjs is an
// ES module without top-level await, so Node >= 20.19 loads it with require(); an older Node
// cannot, and gets told what to do instead of a bare ERR_REQUIRE_ESM.
module.exports = function requireEsm(load, specifier) {
  try {
    return load();
  } catch (e) {
    if (e && (e.code === 'ERR_REQUIRE_ESM' || e.code === 'ERR_REQUIRE_ASYNC_MODULE')) {
      throw new Error(
        `${specifier} is an ES module and Node ${process.version} cannot require() it: use ESM ` +
          `(import from '${specifier}' in an .mjs file, or "type": "module" in your package.json), ` +
          `or \`await import('${specifier}')\` from CommonJS; Node >= 20.19 can also require() it`,
        { cause: e },
      );
    }
    throw e;
  }
};
