// `require("edge-offload/store")`: see load.cjs.
module.exports = require("./load.cjs")(require, "../store-kit.js", "edge-offload/store");
