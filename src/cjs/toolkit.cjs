// `require("edge-offload/toolkit")`: see load.cjs.
module.exports = require("./load.cjs")(require, "../toolkit/entry.js", "edge-offload/toolkit");
