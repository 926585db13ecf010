// `require("edge-offload/pricing")`: see load.cjs.
module.exports = require("./load.cjs")(require, "../pricing.js", "edge-offload/pricing");
