// `require("edge-offload")`: see load.cjs.
module.exports = require("./load.cjs")(require, "../lib.js", "edge-offload");
