// `require("edge-offload/extract")`: see load.cjs.
module.exports = require("./load.cjs")(require, "../extract/entry.js", "edge-offload/extract");
