// `require("edge-offload/contract")`: see load.cjs (the suites need the optional peer vitest).
module.exports = require("./load.cjs")(require, "../contract/index.js", "edge-offload/contract");
