// `require("edge-offload/store")`: see load.cjs.
module.exports = require("./load.cjs")(require, "../store/entry.js", "edge-offload/store");
