// `require("edge-offload/eval")`: see load.cjs.
module.exports = require("./load.cjs")(require, "../eval/entry.js", "edge-offload/eval");
