// `require("edge-offload/replay")`: see load.cjs.
module.exports = require("./load.cjs")(require, "../replay/entry.js", "edge-offload/replay");
